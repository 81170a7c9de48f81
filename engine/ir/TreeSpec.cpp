#include "engine/ir/TreeSpec.h"

namespace lstudio {
namespace {

/// Python's json.dumps of a string (keys here are ASCII identifiers and digits).
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string body(const PyTree& t) {
  if (t.kind == PyTree::Kind::Leaf) return R"({"type": null, "context": null, "children_spec": []})";
  std::string type = t.kind == PyTree::Kind::Tuple ? "builtins.tuple" : t.kind == PyTree::Kind::List ? "builtins.list" : "builtins.dict";
  // The context is itself JSON text (the dict's keys, json.dumps'ed), stored as a string.
  std::string context = "null";
  if (t.kind == PyTree::Kind::Dict) {
    context = "[";
    for (size_t i = 0; i < t.keys.size(); ++i) context += (i ? ", " : "") + t.keys[i];
    context += "]";
  }
  std::string s = R"({"type": ")" + type + R"(", "context": )" + quoted(context) + R"(, "children_spec": [)";
  for (size_t i = 0; i < t.children.size(); ++i) s += (i ? ", " : "") + body(t.children[i]);
  return s + "]}";
}

}  // namespace

PyTree PyTree::tuple(std::vector<PyTree> children) { return PyTree{Kind::Tuple, {}, std::move(children)}; }

PyTree PyTree::leaves(size_t n) { return tuple(std::vector<PyTree>(n)); }

size_t PyTree::leafCount() const {
  if (kind == Kind::Leaf) return 1;
  size_t n = 0;
  for (const PyTree& c : children) n += c.leafCount();
  return n;
}

std::string treespecJson(const PyTree& tree) { return "[1, " + body(tree) + "]"; }

std::string treespecArgs(size_t n) { return treespecJson(PyTree::tuple({PyTree::leaves(n), PyTree{PyTree::Kind::Dict, {}, {}}})); }

std::string treespecOutputs(size_t n) { return treespecJson(n == 1 ? PyTree{} : PyTree::leaves(n)); }

}  // namespace lstudio
