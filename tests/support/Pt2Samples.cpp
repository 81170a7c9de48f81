#include "tests/support/Pt2Samples.h"

namespace lstudio::test {

/// A small exported program in the current serde style: y = add(mul(x, w), b).
std::string programJson(const std::string& xSize, const std::string& extraNode) {
  return R"({"graph_module": {"graph": {
  "inputs": [{"as_tensor": {"name": "p_w"}}, {"as_tensor": {"name": "b_b"}}, {"as_tensor": {"name": "x"}}],
  "outputs": [{"as_tensor": {"name": "add"}}],
  "nodes": [
    {"target": "torch.ops.aten.mul.Tensor", "inputs": [
       {"name": "self", "arg": {"as_tensor": {"name": "x"}}, "kind": 1},
       {"name": "other", "arg": {"as_tensor": {"name": "p_w"}}, "kind": 1}],
     "outputs": [{"as_tensor": {"name": "mul"}}],
     "metadata": {"stack_trace": "File \"m.py\", line 7, in forward\n    return x * self.w + self.b",
                  "nn_module_stack": "L__self__,,M;L__self__sub,sub,torch.nn.Module"}},
    {"target": "torch.ops.aten.add.Tensor", "inputs": [
       {"name": "self", "arg": {"as_tensor": {"name": "mul"}}, "kind": 1},
       {"name": "other", "arg": {"as_tensor": {"name": "b_b"}}, "kind": 1},
       {"name": "alpha", "arg": {"as_int": 2}, "kind": 2}],
     "outputs": [{"as_tensor": {"name": "add"}}], "metadata": {}})" + extraNode + R"(],
  "tensor_values": {
    "p_w": {"dtype": 7, "sizes": [{"as_int": 4}], "requires_grad": true, "device": {"type": "cpu"}, "strides": [{"as_int": 1}], "storage_offset": {"as_int": 0}, "layout": 7},
    "b_b": {"dtype": 7, "sizes": [{"as_int": 4}], "requires_grad": false, "device": {"type": "cpu"}, "strides": [{"as_int": 1}], "storage_offset": {"as_int": 0}, "layout": 7},
    "x": {"dtype": 7, "sizes": [{"as_expr": {"expr_str": "s0", "hint": {"as_int": )" + xSize + R"(}}}], "requires_grad": false, "device": {"type": "cpu"}, "strides": [{"as_int": 1}], "storage_offset": {"as_int": 0}, "layout": 7},
    "mul": {"dtype": 7, "sizes": [{"as_int": 4}], "requires_grad": false, "device": {"type": "cpu"}, "strides": [{"as_int": 1}], "storage_offset": {"as_int": 0}, "layout": 7},
    "add": {"dtype": 7, "sizes": [{"as_int": 4}], "requires_grad": false, "device": {"type": "cpu"}, "strides": [{"as_int": 1}], "storage_offset": {"as_int": 0}, "layout": 7}},
  "sym_int_values": {}, "sym_bool_values": {}, "is_single_tensor_return": false},
 "signature": {"input_specs": [
    {"parameter": {"arg": {"name": "p_w"}, "parameter_name": "w"}},
    {"buffer": {"arg": {"name": "b_b"}, "buffer_name": "b", "persistent": true}},
    {"user_input": {"arg": {"as_tensor": {"name": "x"}}}}],
  "output_specs": [{"user_output": {"arg": {"as_tensor": {"name": "add"}}}}]},
 "module_call_graph": [{"fqn": "", "signature": null}, {"fqn": "sub", "signature": null}]},
 "opset_version": {"aten": 10}, "range_constraints": {"s0": {"min_val": 2, "max_val": 16}},
 "schema_version": {"major": 8, "minor": 12}, "verifiers": ["TRAINING"], "torch_version": "2.9.0"})";
}

namespace {
std::string tensor4(bool grad = false) {
  return std::string(R"({"dtype": 7, "sizes": [{"as_int": 4}], "requires_grad": )") + (grad ? "true" : "false") +
         R"(, "device": {"type": "cpu"}, "strides": [{"as_int": 1}], "storage_offset": {"as_int": 0}, "layout": 7})";
}
std::string scalarTensor(int dtype) {
  return R"({"dtype": )" + std::to_string(dtype) +
         R"(, "sizes": [], "requires_grad": false, "device": {"type": "cpu"}, "strides": [], "storage_offset": {"as_int": 0}, "layout": 7})";
}
std::string arg(const char* name, const std::string& value) {
  return std::string(R"({"name": ")") + name + R"(", "arg": )" + value + R"(, "kind": 1})";
}
std::string tensorArg(const char* name, const char* tensor) {
  return arg(name, std::string(R"({"as_tensor": {"name": ")") + tensor + R"("}})");
}
std::string branch(const char* name, const std::string& nodes, const char* result, const std::string& values) {
  return std::string(R"({"as_graph": {"name": ")") + name + R"(", "graph": {
      "inputs": [{"as_tensor": {"name": "x"}}, {"as_tensor": {"name": "p_w"}}],
      "outputs": [{"as_tensor": {"name": ")" + result + R"("}}],
      "nodes": [)" + nodes + R"(],
      "tensor_values": {"x": )" + tensor4() + R"(, "p_w": )" + tensor4() + values + R"(},
      "sym_int_values": {}, "sym_bool_values": {}, "is_single_tensor_return": false}}})";
}
}  // namespace

std::string condProgramJson() {
  const std::string trueBranch = branch(
      "true_graph_0",
      R"({"target": "torch.ops.aten.mul.Tensor", "inputs": [)" + tensorArg("self", "x") + ", " + tensorArg("other", "p_w") +
          R"(], "outputs": [{"as_tensor": {"name": "mul"}}], "metadata": {}})",
      "mul", R"(, "mul": )" + tensor4());
  const std::string falseBranch = branch(
      "false_graph_0",
      R"({"target": "torch.ops.aten.cos.default", "inputs": [)" + tensorArg("self", "x") +
          R"(], "outputs": [{"as_tensor": {"name": "cos"}}], "metadata": {}},
         {"target": "torch.ops.aten.mul.Tensor", "inputs": [)" + tensorArg("self", "cos") + ", " +
          arg("other", R"({"as_float": 2.0})") + R"(], "outputs": [{"as_tensor": {"name": "mul_1"}}], "metadata": {}})",
      "mul_1", R"(, "cos": )" + tensor4() + R"(, "mul_1": )" + tensor4());
  return R"({"graph_module": {"graph": {
  "inputs": [{"as_tensor": {"name": "p_w"}}, {"as_tensor": {"name": "x"}}],
  "outputs": [{"as_tensor": {"name": "getitem"}}],
  "nodes": [
    {"target": "torch.ops.aten.sum.default", "inputs": [)" + tensorArg("self", "x") + R"(],
     "outputs": [{"as_tensor": {"name": "sum_1"}}], "metadata": {}},
    {"target": "torch.ops.aten.gt.Scalar", "inputs": [)" + tensorArg("self", "sum_1") + ", " + arg("other", R"({"as_int": 0})") + R"(],
     "outputs": [{"as_tensor": {"name": "gt"}}], "metadata": {}},
    {"target": "torch.ops.higher_order.cond", "inputs": [)" + arg("", R"({"as_tensor": {"name": "gt"}})") + ", " +
         arg("", trueBranch) + ", " + arg("", falseBranch) + ", " +
         arg("", R"({"as_tensors": [{"name": "x"}, {"name": "p_w"}]})") + R"(],
     "outputs": [{"as_tensor": {"name": "getitem"}}],
     "metadata": {"stack_trace": "File \"m.py\", line 9, in forward\n    return torch.cond(x.sum() > 0, t, f, [x, self.w]"}}],
  "tensor_values": {"p_w": )" + tensor4(true) + R"(, "x": )" + tensor4() + R"(, "sum_1": )" + scalarTensor(7) +
         R"(, "gt": )" + scalarTensor(12) + R"(, "getitem": )" + tensor4() + R"(},
  "sym_int_values": {}, "sym_bool_values": {}, "is_single_tensor_return": false},
 "signature": {"input_specs": [
    {"parameter": {"arg": {"name": "p_w"}, "parameter_name": "w"}},
    {"user_input": {"arg": {"as_tensor": {"name": "x"}}}}],
  "output_specs": [{"user_output": {"arg": {"as_tensor": {"name": "getitem"}}}}]},
 "module_call_graph": [{"fqn": "", "signature": null}]},
 "opset_version": {"aten": 10}, "range_constraints": {},
 "schema_version": {"major": 8, "minor": 12}, "verifiers": ["TRAINING"], "torch_version": "2.13.0"})";
}

namespace {
std::string rows3x4() {
  return R"({"dtype": 7, "sizes": [{"as_int": 3}, {"as_int": 4}], "requires_grad": false, "device": {"type": "cpu"}, "strides": [{"as_int": 4}, {"as_int": 1}], "storage_offset": {"as_int": 0}, "layout": 7})";
}
std::string node(const char* target, const std::string& inputs, const char* result) {
  return std::string(R"({"target": ")") + target + R"(", "inputs": [)" + inputs + R"(], "outputs": [{"as_tensor": {"name": ")" +
         result + R"("}}], "metadata": {}})";
}
std::string graphArg(const char* name, const std::string& inputs, const std::string& outputs, const std::string& nodes,
                     const std::string& values) {
  return std::string(R"({"as_graph": {"name": ")") + name + R"(", "graph": {"inputs": [)" + inputs + R"(], "outputs": [)" +
         outputs + R"(], "nodes": [)" + nodes + R"(], "tensor_values": {)" + values +
         R"(}, "sym_int_values": {}, "sym_bool_values": {}, "is_single_tensor_return": false}}})";
}
std::string programAround(const std::string& inputs, const std::string& outputs, const std::string& nodes,
                          const std::string& values, const std::string& userInputs, const std::string& userOutputs) {
  return R"({"graph_module": {"graph": {"inputs": [)" + inputs + R"(], "outputs": [)" + outputs + R"(], "nodes": [)" + nodes +
         R"(], "tensor_values": {)" + values + R"(}, "sym_int_values": {}, "sym_bool_values": {}, "is_single_tensor_return": false},
 "signature": {"input_specs": [{"parameter": {"arg": {"name": "p_w"}, "parameter_name": "w"}}, )" + userInputs +
         R"(], "output_specs": [)" + userOutputs + R"(]},
 "module_call_graph": [{"fqn": "", "signature": null}]},
 "opset_version": {"aten": 10}, "range_constraints": {},
 "schema_version": {"major": 8, "minor": 12}, "verifiers": ["TRAINING"], "torch_version": "2.13.0"})";
}
}  // namespace

std::string mapProgramJson() {
  const std::string body = graphArg(
      "body_graph_0", R"({"as_tensor": {"name": "xs"}}, {"as_tensor": {"name": "y"}}, {"as_tensor": {"name": "p_w"}})",
      R"({"as_tensor": {"name": "add"}})",
      node("torch.ops.aten.sin.default", tensorArg("self", "xs"), "sin") + ", " +
          node("torch.ops.aten.mul.Tensor", tensorArg("self", "sin") + ", " + tensorArg("other", "p_w"), "mul") + ", " +
          node("torch.ops.aten.add.Tensor", tensorArg("self", "mul") + ", " + tensorArg("other", "y"), "add"),
      R"("xs": )" + tensor4() + R"(, "y": )" + tensor4() + R"(, "p_w": )" + tensor4(true) + R"(, "sin": )" + tensor4() +
          R"(, "mul": )" + tensor4() + R"(, "add": )" + tensor4());
  return programAround(
      R"({"as_tensor": {"name": "p_w"}}, {"as_tensor": {"name": "x"}}, {"as_tensor": {"name": "y"}})",
      R"({"as_tensor": {"name": "getitem"}})",
      R"({"target": "torch.ops.higher_order.map_impl", "inputs": [)" + arg("", body) + ", " +
          arg("", R"({"as_tensors": [{"name": "x"}]})") + ", " + arg("", R"({"as_tensors": [{"name": "y"}, {"name": "p_w"}]})") +
          R"J(], "outputs": [{"as_tensor": {"name": "getitem"}}], "metadata": {"stack_trace": "File \"m.py\", line 9, in forward\n    return map(body, x, y)"}})J",
      R"("p_w": )" + tensor4(true) + R"(, "x": )" + rows3x4() + R"(, "y": )" + tensor4() + R"(, "getitem": )" + rows3x4(),
      R"({"user_input": {"arg": {"as_tensor": {"name": "x"}}}}, {"user_input": {"arg": {"as_tensor": {"name": "y"}}}})",
      R"({"user_output": {"arg": {"as_tensor": {"name": "getitem"}}}})");
}

std::string scanProgramJson() {
  const std::string body = graphArg(
      "scan_combine_graph_0", R"({"as_tensor": {"name": "h"}}, {"as_tensor": {"name": "x"}}, {"as_tensor": {"name": "p_w"}})",
      R"({"as_tensor": {"name": "add"}}, {"as_tensor": {"name": "sin"}})",
      node("torch.ops.aten.mul.Tensor", tensorArg("self", "x") + ", " + tensorArg("other", "p_w"), "mul") + ", " +
          node("torch.ops.aten.add.Tensor", tensorArg("self", "mul") + ", " + tensorArg("other", "h"), "add") + ", " +
          node("torch.ops.aten.sin.default", tensorArg("self", "add"), "sin"),
      R"("h": )" + tensor4() + R"(, "x": )" + tensor4() + R"(, "p_w": )" + tensor4(true) + R"(, "mul": )" + tensor4() +
          R"(, "add": )" + tensor4() + R"(, "sin": )" + tensor4());
  return programAround(
      R"({"as_tensor": {"name": "p_w"}}, {"as_tensor": {"name": "h"}}, {"as_tensor": {"name": "xs"}})",
      R"({"as_tensor": {"name": "getitem"}}, {"as_tensor": {"name": "getitem_1"}})",
      R"({"target": "torch.ops.higher_order.scan", "inputs": [)" + arg("", body) + ", " +
          arg("", R"({"as_tensors": [{"name": "h"}]})") + ", " + arg("", R"({"as_tensors": [{"name": "xs"}]})") + ", " +
          arg("", R"({"as_tensors": [{"name": "p_w"}]})") +
          R"(], "outputs": [{"as_tensor": {"name": "getitem"}}, {"as_tensor": {"name": "getitem_1"}}], "metadata": {}})",
      R"("p_w": )" + tensor4(true) + R"(, "h": )" + tensor4() + R"(, "xs": )" + rows3x4() + R"(, "getitem": )" + tensor4() +
          R"(, "getitem_1": )" + rows3x4(),
      R"({"user_input": {"arg": {"as_tensor": {"name": "h"}}}}, {"user_input": {"arg": {"as_tensor": {"name": "xs"}}}})",
      R"({"user_output": {"arg": {"as_tensor": {"name": "getitem"}}}}, {"user_output": {"arg": {"as_tensor": {"name": "getitem_1"}}}})");
}

std::string floats(std::initializer_list<float> v) { return std::string(reinterpret_cast<const char*>(v.begin()), v.size() * 4); }

std::string weightsConfig(int wBytesElems) {
  return R"({"config": {"w": {"path_name": "weight_0", "is_param": true, "use_pickle": false, "tensor_meta": {"dtype": 7, "sizes": [{"as_int": )" +
         std::to_string(wBytesElems) + R"(}]}}, "b": {"path_name": "weight_1", "is_param": false, "use_pickle": false, "tensor_meta": {"dtype": 7, "sizes": [{"as_int": 4}]}}}})";
}

std::vector<ZipRecord> archiveRecords(const std::string& json, const std::string& config, const std::string& w) {
  return {{"m/archive_format", "pt2"},
          {"m/archive_version", "0"},
          {"m/byteorder", "little"},
          {"m/models/model.json", json},
          {"m/data/weights/model_weights_config.json", config},
          {"m/data/weights/weight_0", w},
          {"m/data/weights/weight_1", floats({10, 20, 30, 40})}};
}

}  // namespace lstudio::test
