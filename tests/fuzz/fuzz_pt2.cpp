// libFuzzer target: .pt2 / ETRecord zips through the importer (zip, JSON,
// pickle, program mapping, edge-dialect check) and the lowering pipeline, under the
// default config, with constant folding and reinplacing on, and through XnnpackPartitioner
// (to_edge_transform_and_lower's decompositions and the partition, default and per-op mode,
// then to_backend with XNNPACK's preprocess compiling each partition, and to_executorch).
#include "engine/inspect/Inspect.h"
#include "engine/formats/Pt2Reader.h"
#include "engine/lowering/Pipeline.h"
#include "engine/lowering/partition/XnnpackPartitioner.h"

using namespace lstudio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)readPt2SampleInputs(MappedFile::fromBytes("fuzz.pt2", data, size));  // run --inputs sample
  auto program = readExport(MappedFile::fromBytes("fuzz.pt2", data, size));
  if (!program.ok()) return 0;
  (void)toText(summarize(program.value()));
  auto input = std::make_shared<const Program>(std::move(program.value()));
  Pipeline pipeline(input, ExecutorchBackendConfig{});
  pipeline.runToEnd();
  // Constant folding runs kernels on the file's own constants; reinplacing rewrites its writes.
  ExecutorchBackendConfig folding;
  folding.doQuantFusionAndConstProp = true;
  folding.runReinplacePass = true;
  Pipeline folded(input, folding);
  folded.runToEnd();
  ExecutorchBackendConfig partitioned;
  partitioned.partitioners = {PartitionerSpec{}};
  Pipeline partitioning(input, partitioned);
  partitioning.runTo("XnnpackPartitioner");
  if (!partitioning.failed()) {
    PartitionerSpec perOp;
    perOp.perOpMode = true;
    for (const Method& m : partitioning.current()->methods) (void)partitionForXnnpack(m, perOp);
    partitioning.runToEnd();
  }
  return 0;
}
