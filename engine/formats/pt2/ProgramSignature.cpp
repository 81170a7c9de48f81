// The graph signature of an exported program (which placeholders are parameters, buffers,
// constants or user inputs, which outputs mutate buffers) and its module call graph.
#include "engine/formats/pt2/ProgramJson.h"

namespace lstudio::pt2 {

/// torch 2.1's signature: name maps instead of spec lists.
Status ProgramJson::signatureV1(element sig) {
  auto names = [&](const char* key) {
    std::vector<std::string> out;
    simdjson::dom::array a;
    element e;
    if (sig[key].get(e) == simdjson::SUCCESS && e.get_array().get(a) == simdjson::SUCCESS)
      for (element x : a) {
        std::string_view s;
        if (x.get_string().get(s) == simdjson::SUCCESS) out.push_back(std::string(s));
      }
    return out;
  };
  auto mapping = [&](element obj, const char* key) {
    std::vector<std::pair<std::string, std::string>> out;
    simdjson::dom::object o;
    element e;
    if (obj[key].get(e) == simdjson::SUCCESS && e.get_object().get(o) == simdjson::SUCCESS)
      for (auto [k, v] : o) {
        std::string_view s;
        if (v.get_string().get(s) == simdjson::SUCCESS) out.push_back({std::string(k), std::string(s)});
      }
    return out;
  };
  auto params = mapping(sig, "inputs_to_parameters"), buffers = mapping(sig, "inputs_to_buffers");
  auto userIns = names("user_inputs");
  for (ValueId v : m_.inputs) {
    const std::string& n = m_.values[v].name;
    InputSpec s;
    s.value = v;
    for (auto& [in, target] : params)
      if (in == n) s.kind = InputSpec::Kind::Parameter, s.target = target;
    for (auto& [in, target] : buffers)
      if (in == n) s.kind = InputSpec::Kind::Buffer, s.target = target;
    if (!s.target.empty())
      if (auto* t = std::get_if<TensorSpec>(&m_.values[v].payload)) t->fqn = s.target;
    m_.signature.inputs.push_back(s);
  }
  auto mutated = mapping(sig, "buffers_to_mutate");
  for (ValueId v : m_.outputs) {
    OutputSpec s;
    s.value = v;
    for (auto& [out, target] : mutated)
      if (out == m_.values[v].name) s.kind = OutputSpec::Kind::BufferMutation, s.target = target;
    m_.signature.outputs.push_back(s);
  }
  return Ok{};
}

Status ProgramJson::signature(element gm) {
  auto sig = field(gm, "signature", "graph_module");
  if (!sig) return sig.error();
  element probe;
  if (sig->type() == element_type::OBJECT && (*sig)["input_specs"].get(probe) != simdjson::SUCCESS &&
      (*sig)["inputs_to_parameters"].get(probe) == simdjson::SUCCESS)
    return signatureV1(*sig);
  auto in = field(*sig, "input_specs", "signature");
  if (!in) return in.error();
  auto ia = array(*in, "signature.input_specs");
  if (!ia) return ia.error();
  size_t idx = 0;
  for (element spec : *ia)
    if (auto s = inputSpec(spec, "signature.input_specs[" + std::to_string(idx++) + "]"); !s) return s;
  auto out = field(*sig, "output_specs", "signature");
  if (!out) return out.error();
  auto oa = array(*out, "signature.output_specs");
  if (!oa) return oa.error();
  idx = 0;
  for (element spec : *oa)
    if (auto s = outputSpec(spec, "signature.output_specs[" + std::to_string(idx++) + "]"); !s) return s;
  return Ok{};
}

/// One input spec at `w`: what kind of placeholder it is, which value, and which
/// parameter, buffer or constant it stands for.
Status ProgramJson::inputSpec(element spec, const std::string& w) {
  auto u = unionMember(spec, w);
  if (!u) return u.error();
  auto& [kind, x] = u.value();
  InputSpec s;
  const char* targetKey = nullptr;
  if (kind == "user_input") s.kind = InputSpec::Kind::User;
  else if (kind == "parameter") s.kind = InputSpec::Kind::Parameter, targetKey = "parameter_name";
  else if (kind == "buffer") s.kind = InputSpec::Kind::Buffer, targetKey = "buffer_name";
  else if (kind == "tensor_constant" || kind == "constant_tensor")
    s.kind = InputSpec::Kind::ConstantTensor, targetKey = "tensor_constant_name";
  else if (kind == "custom_obj") s.kind = InputSpec::Kind::CustomObject, targetKey = "custom_obj_name";
  else if (kind == "token") s.kind = InputSpec::Kind::Token;
  else if (kind == "constant_input") {
    s.kind = InputSpec::Kind::User;  // a constant bound to an input; no placeholder value
    m_.signature.inputs.push_back(s);
    return Ok{};
  } else {
    return fail(w, "a known input spec kind", kind);
  }
  auto arg = field(x, "arg", w);
  if (!arg) return arg.error();
  // Parameters and buffers hold {"name": ...}; user inputs hold an Argument.
  element nameEl;
  std::string name;
  if (arg->type() == element_type::OBJECT && (*arg)["name"].get(nameEl) == simdjson::SUCCESS) {
    auto ns = string(nameEl, w + ".arg.name");
    if (!ns) return ns.error();
    name = ns.value();
  } else if (auto am = unionMember(*arg, w + ".arg"); am && am->first == "as_tensor") {
    element ne;
    if (am->second["name"].get(ne) == simdjson::SUCCESS) name = string(ne, w).value();
  }
  if (!name.empty()) {
    auto id = tensorByName(name, w + ".arg");
    if (id) s.value = *id;
    else if (s.kind != InputSpec::Kind::User && s.kind != InputSpec::Kind::CustomObject) return id.error();
  }
  if (targetKey) {
    auto t = optField(x, targetKey);
    if (t && !t->is_null()) s.target = string(*t, w).value_or(std::string());
    if (kind == "constant_tensor") {
      auto t2 = optField(x, "constant_name");
      if (t2 && !t2->is_null()) s.target = string(*t2, w).value_or(std::string());
    }
  }
  if (kind == "buffer") {
    bool persistent = true;
    element pe;
    if (x["persistent"].get(pe) == simdjson::SUCCESS) persistent = boolOr(pe, true);
    s.persistent = persistent;
  }
  if (s.value != kNoValue && !s.target.empty()) {
    TensorSpec* t = std::get_if<TensorSpec>(&m_.values[s.value].payload);
    if (t) t->fqn = s.target;
  }
  m_.signature.inputs.push_back(s);
  return Ok{};
}

/// One output spec at `w`: what kind of result it is, which value, and what it updates.
Status ProgramJson::outputSpec(element spec, const std::string& w) {
  auto u = unionMember(spec, w);
  if (!u) return u.error();
  auto& [kind, x] = u.value();
  OutputSpec s;
  const char* targetKey = nullptr;
  if (kind == "user_output") s.kind = OutputSpec::Kind::User;
  else if (kind == "loss_output") s.kind = OutputSpec::Kind::Loss;
  else if (kind == "buffer_mutation") s.kind = OutputSpec::Kind::BufferMutation, targetKey = "buffer_name";
  else if (kind == "gradient_to_parameter") s.kind = OutputSpec::Kind::GradientToParameter, targetKey = "parameter_name";
  else if (kind == "gradient_to_user_input") s.kind = OutputSpec::Kind::GradientToUserInput, targetKey = "user_input_name";
  else if (kind == "user_input_mutation") s.kind = OutputSpec::Kind::UserInputMutation, targetKey = "user_input_name";
  else if (kind == "parameter_mutation") s.kind = OutputSpec::Kind::BufferMutation, targetKey = "parameter_name";
  else if (kind == "token") s.kind = OutputSpec::Kind::Token;
  else return fail(w, "a known output spec kind", kind);
  auto arg = field(x, "arg", w);
  if (!arg) return arg.error();
  element nameEl;
  if (arg->type() == element_type::OBJECT && (*arg)["name"].get(nameEl) == simdjson::SUCCESS) {
    if (auto id = tensorByName(string(nameEl, w).value_or(""), w)) s.value = *id;
  } else if (auto am = unionMember(*arg, w + ".arg"); am && am->first == "as_tensor") {
    element ne;
    if (am->second["name"].get(ne) == simdjson::SUCCESS)
      if (auto id = tensorByName(string(ne, w).value_or(""), w)) s.value = *id;
  }
  if (targetKey) {
    auto t = optField(x, targetKey);
    if (t && !t->is_null()) s.target = string(*t, w).value_or(std::string());
  }
  m_.signature.outputs.push_back(s);
  return Ok{};
}

void ProgramJson::moduleCallGraph(element gm) {
  element mcg;
  simdjson::dom::array a;
  if (gm["module_call_graph"].get(mcg) != simdjson::SUCCESS || mcg.get_array().get(a) != simdjson::SUCCESS) return;
  for (element e : a) {
    ModuleCall call;
    std::string_view s;
    element f;
    if (e["fqn"].get(f) == simdjson::SUCCESS && f.get_string().get(s) == simdjson::SUCCESS) call.fqn = std::string(s);
    element sig;
    if (e["signature"].get(sig) == simdjson::SUCCESS && sig.is_object()) {
      if (sig["in_spec"].get(f) == simdjson::SUCCESS && f.get_string().get(s) == simdjson::SUCCESS) call.inSpec = std::string(s);
      if (sig["out_spec"].get(f) == simdjson::SUCCESS && f.get_string().get(s) == simdjson::SUCCESS) call.outSpec = std::string(s);
    }
    m_.moduleCalls.push_back(std::move(call));
  }
}

}  // namespace lstudio::pt2
