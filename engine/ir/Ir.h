// The studio's program IR: one representation for imported .pt2 graphs, every
// lowering stage, memory plans, and programs read from or written to .pte.
//
// A Program holds Methods. A Method is a value table (like ExecuTorch's
// EValues: tensors, scalars, lists, None) plus nodes in execution order that
// read and write those values. Tensor values carry a TensorSpec that says
// what the tensor is (dtype, shape, dim order, dynamism) and where its bytes
// live (constant data, planned arena slot, external key, run-time input).
// Large byte ranges (weights, delegate blobs) are never copied: they are
// Bytes spans into a memory-mapped file that the Program keeps alive.
#pragma once

#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/support/MappedFile.h"
#include "engine/ir/ScalarType.h"

namespace lstudio {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

/// A read-only byte range inside a mapped file owned by the Program.
struct Bytes {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  uint64_t fileOffset = 0;  ///< where the range starts in its file (for reports)
  bool empty() const { return size == 0; }
};

enum class ShapeDynamism : uint8_t { Static = 0, DynamicBound = 1, DynamicUnbound = 2 };

/// Where a tensor's bytes live.
enum class TensorStorage : uint8_t {
  RunTime,  ///< supplied when the method runs (inputs, unplanned results)
  Planned,  ///< a slot (mem_id, offset) in a memory-planned arena
  Constant, ///< constant data inside the program file
  External, ///< constant data in a .ptd, found by its fully qualified name
  Mutable,  ///< planned, with an initial value in the program or a .ptd (e.g. trainable weights)
};
const char* tensorStorageName(TensorStorage s);

/// A planned allocation: arena `memId` (0 is reserved), byte `offset` in it.
struct PlannedSlot {
  uint32_t memId = 0;
  uint64_t offset = 0;
};

/// Where a tensor's memory is (ExecuTorch's DeviceType and device index): a
/// delegate's "target_device" compile spec puts the tensors it reads and
/// writes there (PropagateDevicePass); everything else is on the CPU.
enum class DeviceType : uint8_t { Cpu = 0, Cuda = 1 };
struct Device {
  DeviceType type = DeviceType::Cpu;
  int8_t index = 0;
  bool isCpu() const { return type == DeviceType::Cpu && index == 0; }
  bool operator==(const Device&) const = default;
  auto operator<=>(const Device&) const = default;
  /// "cpu", "cuda:0"
  std::string name() const;
};
/// Parses a target_device value as ExecuTorch does ("cuda", "CUDA:1"); nullopt
/// for a device type the schema does not have.
std::optional<Device> parseDevice(const std::string& text);

/// Where a constant's bytes come from inside a .pte.
enum class ConstantSource : uint8_t { None, ConstantBuffer, ConstantSegment, MutableSegment, External };

struct TensorSpec {
  ScalarType dtype = ScalarType::Float;
  /// Sizes; for DynamicBound tensors these are the upper bounds.
  std::vector<int64_t> sizes;
  /// Symbolic name per dimension ("s0", ...); empty when every size is static.
  std::vector<std::string> symbols;
  /// Memory order of dimensions, outermost first; {0..n-1} is contiguous.
  std::vector<uint8_t> dimOrder;
  /// Strides in elements as torch.export recorded them; empty when not known.
  std::vector<int64_t> strides;
  ShapeDynamism dynamism = ShapeDynamism::Static;
  int32_t storageOffset = 0;
  int8_t layout = 0;
  bool requiresGrad = false;
  Device device;  ///< extra_tensor_info.device_type / device_index

  std::optional<PlannedSlot> slot;  ///< set when memory-planned
  /// A view sharing the storage of another value (ReplaceViewCopyWithViewPass);
  /// the planner gives it its base's slot.
  ValueId viewOf = kNoValue;
  /// Where the view_copy this view replaced stood: before the node that makes
  /// this value (kNoValue: at the end, or not known). The emitter numbers the
  /// view there, as ExecuTorch numbers its memory.view node's value.
  ValueId viewBefore = kNoValue;
  uint32_t dataBufferIndex = 0;     ///< .pte constant table index; 0 = no data
  std::optional<uint64_t> mutableSegmentIndex;
  bool external = false;            ///< bytes in a .ptd under `fqn`
  std::string fqn;                  ///< fully qualified name, e.g. "linear.weight"
  /// The .ptd file (stem) an external tensor is written to, as tagged by the
  /// external constants pass (ExecuTorch's constant_tag); empty: the writer decides.
  std::string constantTag;
  ConstantSource source = ConstantSource::None;
  Bytes data;                       ///< constant or initial bytes when resolved

  TensorStorage storage() const;
  /// Element count; nullopt when it overflows 64 bits or a size is negative.
  std::optional<uint64_t> numel() const;
  /// numel * element size; nullopt on overflow.
  std::optional<uint64_t> nbytes() const;
  /// "float32[2, 3]"
  std::string shapeString() const;
};

/// IntList items are value ids of Int values (as in ExecuTorch programs).
struct IntList { std::vector<ValueId> items; };
struct DoubleList { std::vector<double> items; };
struct BoolList { std::vector<uint8_t> items; };
struct TensorList { std::vector<ValueId> items; };
/// kNoValue items are None.
struct OptionalTensorList { std::vector<ValueId> items; };
struct None {};

enum class ValueKind : uint8_t {
  None, Int, Bool, Double, String, Tensor, IntList, DoubleList, BoolList, TensorList, OptionalTensorList
};
const char* valueKindName(ValueKind k);

struct Value {
  using Payload = std::variant<None, int64_t, bool, double, std::string, TensorSpec, IntList, DoubleList,
                               BoolList, TensorList, OptionalTensorList>;
  Payload payload;
  std::string name;  ///< graph name when known ("aten_add_tensor", "p_linear_weight")
  /// An Int/Bool/Double computed at run time (a SymInt such as a dynamic
  /// size); `name` holds its symbol or expression, the payload its hint.
  bool symbolic = false;

  ValueKind kind() const { return static_cast<ValueKind>(payload.index()); }
  bool isTensor() const { return kind() == ValueKind::Tensor; }
  const TensorSpec& tensor() const { return std::get<TensorSpec>(payload); }
  TensorSpec& tensor() { return std::get<TensorSpec>(payload); }
  const TensorSpec* tensorIf() const { return std::get_if<TensorSpec>(&payload); }
};

/// An operator as ExecuTorch names it: "aten::add" + overload "out".
struct OperatorRef {
  std::string name;
  std::string overload;
  std::string fullName() const { return overload.empty() ? name : name + "." + overload; }
};

/// "torch.ops.aten.add.Tensor", "executorch.exir.dialects.edge.ops.aten.add.Tensor",
/// "aten.add.Tensor", "aten::add.Tensor" -> {"aten::add", "Tensor"}; no overload -> "default".
OperatorRef operatorFromTarget(std::string_view target);

struct StackFrame {
  std::string file;
  int32_t line = 0;
  std::string function;
  std::string context;  ///< the source line
};

/// One level of the nn.Module hierarchy a node came from.
struct ModuleFrame {
  std::string path;  ///< "layers.0.attention"
  std::string type;  ///< "torch.nn.modules.linear.Linear"
};

struct NodeMeta {
  std::optional<int64_t> debugHandle;
  std::vector<ModuleFrame> moduleStack;  ///< outermost first
  std::vector<StackFrame> stackTrace;    ///< innermost last
  /// A partitioner's verdict (to_edge_transform_and_lower): the partition that takes the
  /// node ("tag0", ExecuTorch's delegation_tag), or why it was left out.
  std::string delegationTag;
  std::string notDelegatedBecause;
  /// A q/dq node XnnpackPartitioner took as part of a quantized pattern (upstream's
  /// IS_IMPLICIT_Q_DQ_TAG): XNNPACK folds it into its neighbours' quantization parameters
  /// instead of writing a conversion.
  bool implicitQdq = false;
  /// The node of the exported graph this one came from (torch.fx's from_node root; a
  /// decomposition's nodes keep their operator's): ExecuTorch's DebugHandleGeneratorPass
  /// gives the nodes of one origin one debug handle.
  std::string origin;
};

enum class NodeKind : uint8_t {
  Kernel,     ///< an operator call
  Delegate,   ///< a call into a backend's compiled blob
  Move,       ///< args[0] -> outputs[0]
  JumpFalse,  ///< if !args[0], continue at jumpTarget
  Free,       ///< release args[0]'s memory
  /// torch.cond before emission: args = [pred, operands...], outputs the
  /// results; subgraphs = {true branch, false branch} (Method::subgraphs).
  /// The emitter inlines it as JumpFalse, branch, Move, JumpFalse, branch, Move.
  Cond,
  /// torch's map_impl before emission: args = [xs, operands...] (argNames
  /// "xs", "operands"), outputs = [the stacked result]; subgraphs = {body}.
  /// The emitter makes it a loop over xs's first dimension (ControlFlow.h).
  Map,
  /// torch's scan: args = [init..., xs..., additional_inputs...] (argNames
  /// say which), outputs = [final carries..., stacked ys...]; subgraphs =
  /// {combine_fn}, which takes (carries, x slices, additional inputs) and
  /// returns (next carries, y slices).
  Scan,
};
/// A node whose work is done by graphs of its own (Method::subgraphs).
inline bool isControlFlow(NodeKind k) { return k == NodeKind::Cond || k == NodeKind::Map || k == NodeKind::Scan; }
const char* nodeKindName(NodeKind k);

struct Node {
  NodeKind kind = NodeKind::Kernel;
  std::string name;    ///< graph node name when known ("linear", "aten_add_tensor")
  std::string target;  ///< the operator as the source spelled it ("torch.ops.aten.add.Tensor")
  int32_t op = -1;        ///< Kernel: index into Method::operators
  int32_t delegate = -1;  ///< Delegate: index into Method::delegates
  /// Every value the node reads or writes, in ExecuTorch's argument order
  /// (for an out-variant kernel: schema args, outs, then the returns).
  std::vector<ValueId> args;
  /// Schema argument name per entry of args, when the source names them (.pt2).
  std::vector<std::string> argNames;
  /// The values the node writes (a subset of args for .pte kernels, found
  /// from the repeated returns; empty when that cannot be told).
  std::vector<ValueId> outputs;
  /// Bit k: args[k] is its schema's default, filled in because the source left it out
  /// (torch.export does not write an argument given its default value).
  uint64_t defaultedArgs = 0;
  int64_t jumpTarget = -1;  ///< JumpFalse: destination instruction
  /// Cond, Map, Scan: the graphs it runs, indices into Method::subgraphs.
  std::vector<int32_t> subgraphs;
  uint32_t chain = 0;
  /// The node after which the last getitem of this node's results runs, when that is not
  /// the node itself: to_backend's legalize_graph moves getitems behind other ready nodes,
  /// and ExecuTorch's planner keeps every result of a call alive through each getitem of it.
  std::string resultsLiveUntil;
  NodeMeta meta;
};

struct CompileSpec {
  std::string key;
  std::vector<uint8_t> value;
};

/// A node of the program a delegate was made from, found by the debug handle
/// the backend's operators carry (known when an ETRecord holds that program).
struct DelegateOrigin {
  uint32_t debugHandle = 0;
  std::string node;    ///< "aten_linear_default"
  std::string op;      ///< "aten.linear.default"
  std::string module;  ///< innermost module path, "fc1"
};

struct NamedBlob {
  std::string key;
  uint32_t segmentIndex = 0;
  Bytes data;
};

struct Program;

struct Delegate {
  enum class Location : uint8_t { Inline, Segment };
  std::string backendId;  ///< "XnnpackBackend", "QnnBackend", ...
  Location location = Location::Inline;
  uint32_t index = 0;     ///< into Program inline delegate data or segments
  Bytes blob;
  std::vector<CompileSpec> compileSpecs;
  std::vector<DelegateOrigin> origins;  ///< empty unless read from an ETRecord
  const DelegateOrigin* origin(uint32_t debugHandle) const;
  /// The program the backend was given (the lowered module's original_module, which an
  /// ETRecord keeps): what the call computes, so the studio can run it without the backend.
  /// Null when the source does not keep it; `originalError` says why one that was there
  /// could not be read.
  std::shared_ptr<const Program> original;
  std::string originalError;
  /// A delegate the studio lowered itself without a payload (`blob` empty): why its
  /// backend's preprocess could not compile the partition. Export refuses it.
  std::string payloadError;
  /// The named data the studio's preprocess made for it (XNNPACK's weights), which the
  /// emitter writes with the program.
  std::vector<NamedBlob> namedData;
};

/// How the graph's inputs and outputs relate to the model (torch.export's signature).
struct InputSpec {
  enum class Kind : uint8_t { User, Parameter, Buffer, ConstantTensor, CustomObject, Token };
  Kind kind = Kind::User;
  ValueId value = kNoValue;
  std::string target;       ///< parameter/buffer fqn
  bool persistent = true;   ///< buffers only
};
struct OutputSpec {
  enum class Kind : uint8_t { User, BufferMutation, UserInputMutation, Loss, GradientToParameter, GradientToUserInput, Token };
  Kind kind = Kind::User;
  ValueId value = kNoValue;
  std::string target;
};
struct GraphSignature {
  std::vector<InputSpec> inputs;
  std::vector<OutputSpec> outputs;
};

/// Range of a symbolic size (torch.export's range_constraints).
struct SymbolRange {
  std::string symbol;
  int64_t min = 0;
  std::optional<int64_t> max;  ///< none: unbounded
};

/// One entry of torch.export's module call graph.
struct ModuleCall {
  std::string fqn;
  std::vector<std::string> inputs, outputs;
  /// Its signature's pytree specs as torch's treespec_dumps writes them (JSON); may be empty.
  std::string inSpec, outSpec;
};

/// Something a reader or pass noticed about a method, tied to a node when it can be.
struct Diagnostic {
  enum class Severity : uint8_t { Note, Warning, Error };
  Severity severity = Severity::Warning;
  int32_t node = -1;  ///< index into Method::nodes, or -1
  std::string message;
};

struct Method {
  std::string name;
  std::vector<Value> values;
  std::vector<Node> nodes;  ///< execution order (chains concatenated)
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  std::vector<OperatorRef> operators;
  std::vector<Delegate> delegates;
  /// Arena size per mem_id as stored (entry 0 unused); empty before planning.
  std::vector<int64_t> nonConstBufferSizes;
  /// The device of each arena (non_const_buffer_device), by mem_id; empty when every
  /// arena is CPU memory, as ExecuTorch writes it then.
  std::vector<Device> arenaDevices;
  GraphSignature signature;
  std::string encodedInputSpec;   ///< pytree spec strings (ContainerMetadata)
  std::string encodedOutputSpec;
  uint32_t chainCount = 1;
  std::vector<SymbolRange> symbolRanges;
  std::vector<ModuleCall> moduleCalls;
  std::vector<Diagnostic> diagnostics;
  /// Graphs that control flow calls (torch.cond's branches): each a method
  /// with its own values, whose inputs are bound to the caller's operands
  /// and whose outputs become the caller's results.
  std::vector<Method> subgraphs;

  const Value& value(ValueId id) const { return values.at(static_cast<size_t>(id)); }
  /// A method that only returns values it stores (ExecuTorch's prim getters, e.g.
  /// __et_training_fqn_forward): no instructions, no inputs. Never planned.
  bool isConstantGetter() const { return nodes.empty() && inputs.empty(); }
  /// Appends the tensors value `v` holds: itself, or the items of a tensor
  /// list (None items and values out of range skipped).
  void appendTensors(ValueId v, std::vector<ValueId>& out) const;
};

/// A byte range after the flatbuffer of a file, in absolute file offsets.
struct Segment {
  uint64_t offset = 0;
  uint64_t size = 0;
};


/// An entry of a .ptd the program was opened with that no tensor of the
/// program names (a delegate's named data, a constant no instruction reads):
/// export writes it back, unchanged, to the data file of the same name.
struct CarriedData {
  std::string file;  ///< the data file's stem ("model" for model.ptd)
  std::string key;
  bool hasLayout = false;  ///< a tensor entry (else an opaque blob)
  ScalarType dtype = ScalarType::Float;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> dimOrder;
  Bytes data;
};

/// Facts about the container a program was read from.
struct ContainerFacts {
  enum class Header : uint8_t { None, Eh00Short, Eh00 };  ///< no extended header, 24-byte, 32-byte eh00
  std::string identifier;  ///< "ET12"
  Header header = Header::None;
  uint32_t headerLength = 0;
  /// Inferred: bytes the eh00 header takes with its padding. ExecuTorch pads it to the
  /// schema's largest force_align (constant_tensor_alignment, delegate_alignment, 16).
  uint32_t headerPadding = 0;
  uint32_t schemaVersion = 0;
  uint64_t fileSize = 0;
  uint64_t programSize = 0;        ///< bytes of the flatbuffer
  uint64_t segmentBaseOffset = 0;  ///< absolute, 0 when there are no segments
  uint64_t segmentDataSize = 0;
  uint64_t segmentAlignment = 0;   ///< inferred: largest power of two (<= 64 KiB) dividing every segment start
  enum class Constants : uint8_t { None, ConstantBuffer, ConstantSegment };
  Constants constants = Constants::None;
  bool bundled = false;            ///< read from a .bpte (BundledProgram)
  uint64_t embeddedOffset = 0;     ///< where the program starts inside the .bpte
  uint32_t bundledTestSuites = 0;
};
const char* headerName(ContainerFacts::Header h);

/// A JumpFalse on a constant false: it always jumps (the jump that ends a
/// cond's true branch in ExecuTorch's layout).
bool jumpsAlways(const Method& m, const Node& n);

/// Calls f on `m` and then on every graph it calls, depth first: the passes
/// that rewrite nodes one by one apply to control-flow branches as well.
template <class M, class F>
void forEachGraph(M& m, F&& f) {
  f(m);
  for (auto& g : m.subgraphs) forEachGraph(g, f);
}
template <class P, class F>
void forEachGraphOf(P& p, F&& f) {
  for (auto& m : p.methods) forEachGraph(m, f);
}

/// The file a Program came from.
enum class SourceFormat : uint8_t { Pte, Pt2, EtRecord };

/// Facts about a torch.export archive (.pt2) or an ETRecord.
struct ExportFacts {
  std::string container;      ///< "pt2 archive", "legacy torch.export zip", "etrecord"
  std::string archiveVersion;
  std::string schemaVersion;  ///< "8.12"
  std::string torchVersion;
  std::string dialect;        ///< "TRAINING", "ATEN", "EDGE", ...
  bool hasSampleInputs = false;
  /// An ETRecord's delegate_map: the backends the program it records was delegated to
  /// ("XnnpackBackend"), kept when its edge programs have no delegate call, that is when
  /// to_edge_transform_and_lower recorded them before partitioning.
  std::vector<std::string> delegatedTo;
};

struct Program {
  std::string path;
  SourceFormat format = SourceFormat::Pte;
  ExportFacts exportFacts;
  ContainerFacts facts;
  std::vector<Method> methods;
  std::vector<Segment> segments;  ///< absolute offsets in the backing file
  std::vector<Bytes> inlineDelegateData;
  std::vector<NamedBlob> namedData;
  /// Constant table index -> bytes (index 0 is the empty placeholder).
  std::vector<Bytes> constants;
  std::shared_ptr<const MappedFile> backing;
  /// Data files whose bytes external tensors reference.
  std::vector<std::shared_ptr<const MappedFile>> externalFiles;
  /// Their entries no tensor names, kept for export (bytes in externalFiles).
  std::vector<CarriedData> carriedData;
  /// Bytes made by lowering passes (folded constants), owned like `backing`.
  std::vector<std::shared_ptr<const MappedFile>> derivedData;

  const Method* method(const std::string& name) const;
};

}  // namespace lstudio
