#include <map>

#include "engine/lowering/decompositions/Decomposition.h"

namespace lstudio::decompositions {

Rule ruleFor(const OperatorRef& op) {
  static const std::map<std::string, Rule> table = [] {
    std::vector<std::pair<std::string, Rule>> rules;
    registerActivationRules(rules);
    registerConvolutionRules(rules);
    registerLinearAlgebraRules(rules);
    registerEinsumRules(rules);
    registerNormalizationRules(rules);
    registerShapeRules(rules);
    registerVisionRules(rules);
    return std::map<std::string, Rule>(rules.begin(), rules.end());
  }();
  auto it = table.find(op.name + "." + (op.overload.empty() ? std::string("default") : op.overload));
  return it == table.end() ? nullptr : it->second;
}

}  // namespace lstudio::decompositions
