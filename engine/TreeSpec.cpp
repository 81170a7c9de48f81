#include "engine/TreeSpec.h"

namespace lstudio {
namespace {

const char* kLeaf = R"({"type": null, "context": null, "children_spec": []})";

std::string tupleOf(size_t n) {
  std::string s = R"({"type": "builtins.tuple", "context": "null", "children_spec": [)";
  for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::string(kLeaf);
  return s + "]}";
}

}  // namespace

std::string treespecArgs(size_t n) {
  return R"([1, {"type": "builtins.tuple", "context": "null", "children_spec": [)" + tupleOf(n) +
         R"(, {"type": "builtins.dict", "context": "[]", "children_spec": []}]}])";
}

std::string treespecOutputs(size_t n) { return "[1, " + (n == 1 ? std::string(kLeaf) : tupleOf(n)) + "]"; }

}  // namespace lstudio
