// libFuzzer target: .ptd bytes through the reader, both reports, and
// external-tensor resolution against a fixed synthetic program whose
// EXTERNAL tensors carry the keys of the seed files (linear.weight, a, ...),
// so mutated entries reach the size and dtype checks of the resolver.
#include <nlohmann/json.hpp>

#include "engine/inspect/Inspect.h"
#include "engine/formats/PtdReader.h"
#include "engine/formats/PteReader.h"
#include "tests/support/SyntheticPte.h"

using namespace lstudio;

namespace {

Program externalProgram() {
  test::SynthProgram p;
  for (const char* key : {"linear.weight", "linear.bias", "a", "b", "net.linear.weight", "net.linear.bias"})
    p.tensors.push_back({ScalarType::Float, {2, 2}, std::nullopt, 0, key});
  p.tensors.push_back({ScalarType::Float, {2, 2}, std::make_pair(1u, uint64_t{0}), 0, {}});
  p.kernels.push_back({"aten::add", "out", {0, 1, 6}});
  p.inputs = {};
  p.outputs = {6};
  p.arenas = {0, 16};
  auto bytes = test::buildSyntheticPte(p);
  auto program = readProgram(MappedFile::fromBytes("fixed.pte", bytes.data(), bytes.size()));
  if (!program.ok()) __builtin_trap();  // the fixed program must read
  return std::move(program.value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Program base = externalProgram();
  auto ptd = readDataFile(MappedFile::fromBytes("fuzz.ptd", data, size));
  if (!ptd.ok()) return 0;
  (void)dataFileText(ptd.value());
  (void)dataFileJson(ptd.value()).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);  // as the CLI does
  Program program = base;
  if (resolveExternalTensors(program, {ptd.value()}).ok()) (void)toText(summarize(program, {ptd.value()}));
  return 0;
}
