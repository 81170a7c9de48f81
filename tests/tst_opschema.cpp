// Operator schemas: the parser on tricky signatures, round trips over the built-in
// table, target lookups, set membership and the functional -> out mapping.
#include <QtTest>

#include <atomic>
#include <thread>

#include "engine/ir/OpRegistry.h"
#include "engine/ir/OpSchema.h"

using namespace lstudio;

namespace {

OpSchema parsed(std::string_view text) {
  auto r = parseSchema(text);
  if (!r) qFatal("parse failed: %s", r.error().message().c_str());
  return std::move(r).value();
}

const OpSchema& op(std::string_view target) {
  const OpSchema* s = OpRegistry::builtin().findByTarget(target);
  if (!s) qFatal("not in the registry: %.*s", int(target.size()), target.data());
  return *s;
}

QString q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

class TestOpSchema : public QObject {
  Q_OBJECT
 private slots:
  void parsesAFunctionalSchema() {
    auto s = parsed("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
    QCOMPARE(q(s.ns), QString("aten"));
    QCOMPARE(q(s.name), QString("add"));
    QCOMPARE(q(s.overload), QString("Tensor"));
    QCOMPARE(s.arguments.size(), size_t(3));
    QCOMPARE(q(s.arguments[1].name), QString("other"));
    QVERIFY(!s.arguments[1].kwargOnly);
    QVERIFY(s.arguments[2].kwargOnly);
    QVERIFY(s.arguments[2].type.base == SchemaType::Base::Scalar);
    QCOMPARE(q(*s.arguments[2].defaultValue), QString("1"));
    QVERIFY(!s.arguments[0].defaultValue);
    QCOMPARE(s.returns.size(), size_t(1));
    QVERIFY(s.returns[0].name.empty());
    QVERIFY(!s.isOutVariant());
    QVERIFY(!s.isInplace());
    QCOMPARE(q(s.qualifiedName()), QString("aten::add.Tensor"));
  }

  void namespaceIsOptional() {
    auto s = parsed("convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
                    "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor");
    QCOMPARE(q(s.ns), QString("aten"));
    QVERIFY(s.overload.empty());
    QCOMPARE(q(s.qualifiedName()), QString("aten::convolution"));
    auto c = parseSchema("_clone_dim_order(Tensor self, *, bool non_blocking=False, int[]? dim_order=None) -> Tensor",
                         "dim_order_ops");
    QVERIFY(c.ok());
    QCOMPARE(q(c->qualifiedName()), QString("dim_order_ops::_clone_dim_order"));
  }

  void parsesOutArgumentsAndTheirAliases() {
    auto s = parsed("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)");
    const auto& out = s.arguments.back();
    QCOMPARE(q(out.name), QString("out"));
    QVERIFY(out.kwargOnly);
    QVERIFY(out.isWrite);
    QCOMPARE(q(out.aliasSet), QString("a"));
    QCOMPARE(q(out.type.spelling), QString("Tensor"));
    QCOMPARE(q(s.returns[0].aliasSet), QString("a"));
    QVERIFY(s.returns[0].isWrite);
    QVERIFY(s.isOutVariant());
    QCOMPARE(q(s.toString()),
             QString("aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)"));
  }

  void parsesViewAliases() {
    auto s = parsed("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)");
    QCOMPARE(q(s.arguments[0].aliasSet), QString("a"));
    QVERIFY(!s.arguments[0].isWrite);
    QCOMPARE(q(s.returns[0].aliasSet), QString("a"));
    QVERIFY(!s.returns[0].isWrite);
    QVERIFY(!s.isOutVariant());
    QVERIFY(!s.isInplace());
    auto split = parsed("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]");
    QCOMPARE(q(split.arguments[0].aliasSet), QString("a"));
    QCOMPARE(q(split.arguments[0].aliasAfterSet), QString("*"));
    QVERIFY(split.returns[0].type.list);
    QCOMPARE(q(split.returns[0].toString()), QString("Tensor(a)[]"));
    QCOMPARE(q(split.toString()),
             QString("aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]"));
  }

  void parsesFixedSizeListsWithScalarDefaults() {
    auto s = parsed("conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, "
                    "SymInt[2] dilation=1, SymInt groups=1) -> Tensor");
    const auto& bias = s.arguments[2];
    QVERIFY(bias.type.optional);
    QVERIFY(!bias.type.list);
    QCOMPARE(q(*bias.defaultValue), QString("None"));
    const auto& stride = s.arguments[3];
    QVERIFY(stride.type.base == SchemaType::Base::SymInt);
    QVERIFY(stride.type.list);
    QCOMPARE(stride.type.fixedSize, 2);
    QVERIFY(!stride.type.optional);
    QCOMPARE(q(*stride.defaultValue), QString("1"));
    auto pool = parsed("avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
                       "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor");
    QVERIFY(pool.arguments[2].type.base == SchemaType::Base::Int);
    QCOMPARE(pool.arguments[2].type.fixedSize, 2);
    QCOMPARE(q(*pool.arguments[2].defaultValue), QString("[]"));
    QCOMPARE(q(pool.arguments[2].type.spelling), QString("int[2]"));
    QVERIFY(pool.arguments[6].type.optional);
  }

  void parsesOptionalLists() {
    auto s = parsed("sum.dim_IntList(Tensor self, SymInt[1]? dim=None, bool keepdim=False, *, "
                    "ScalarType? dtype=None) -> Tensor");
    const auto& dim = s.arguments[1];
    QVERIFY(dim.type.base == SchemaType::Base::SymInt);
    QVERIFY(dim.type.list);
    QVERIFY(dim.type.optional);
    QVERIFY(!dim.type.optionalElements);
    QCOMPARE(dim.type.fixedSize, 1);
    QCOMPARE(q(dim.type.spelling), QString("SymInt[1]?"));
    QCOMPARE(q(*dim.defaultValue), QString("None"));
    QCOMPARE(q(dim.toString()), QString("SymInt[1]? dim=None"));
  }

  void parsesListsOfOptionalTensors() {
    auto s = parsed("index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor");
    const auto& idx = s.arguments[1];
    QVERIFY(idx.type.base == SchemaType::Base::Tensor);
    QVERIFY(idx.type.list);
    QVERIFY(idx.type.optionalElements);
    QVERIFY(!idx.type.optional);
    QCOMPARE(idx.type.fixedSize, 0);
    QCOMPARE(q(idx.type.spelling), QString("Tensor?[]"));
    QCOMPARE(q(idx.type.toString()), QString("Tensor?[]"));
  }

  void parsesTensorOptionsKeywords() {
    auto s = parsed("full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, "
                    "Device? device=None, bool? pin_memory=None) -> Tensor");
    QCOMPARE(s.arguments.size(), size_t(6));
    QVERIFY(!s.arguments[1].kwargOnly);
    for (size_t i = 2; i < 6; ++i) {
      QVERIFY(s.arguments[i].kwargOnly);
      QVERIFY(s.arguments[i].type.optional);
      QCOMPARE(q(*s.arguments[i].defaultValue), QString("None"));
    }
    QVERIFY(s.arguments[2].type.base == SchemaType::Base::ScalarType);
    QVERIFY(s.arguments[3].type.base == SchemaType::Base::Layout);
    QVERIFY(s.arguments[4].type.base == SchemaType::Base::Device);
    QVERIFY(s.arguments[5].type.base == SchemaType::Base::Bool);
    auto mf = parsed("clone(Tensor self, *, MemoryFormat? memory_format=contiguous_format) -> Tensor");
    QVERIFY(mf.arguments[1].type.base == SchemaType::Base::MemoryFormat);
    QCOMPARE(q(*mf.arguments[1].defaultValue), QString("contiguous_format"));
  }

  void parsesNamedAndTupleReturns() {
    auto s = parsed("topk.values(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True, *, "
                    "Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)");
    QCOMPARE(s.returns.size(), size_t(2));
    QCOMPARE(q(s.returns[0].name), QString("values"));
    QCOMPARE(q(s.returns[1].name), QString("indices"));
    QCOMPARE(q(s.returns[1].aliasSet), QString("b"));
    QVERIFY(s.returns[1].isWrite);
    QCOMPARE(q(*s.arguments[2].defaultValue), QString("-1"));
    QVERIFY(s.isOutVariant());
    auto named = parsed("quantized_decomposed::add(Tensor a, float a_scale, Tensor b) -> Tensor qc");
    QCOMPARE(q(named.returns[0].name), QString("qc"));
    QCOMPARE(q(named.toString()), QString("quantized_decomposed::add(Tensor a, float a_scale, Tensor b) -> Tensor qc"));
  }

  void parsesListAndEmptyReturns() {
    auto l = parsed("unbind_copy.int(Tensor self, int dim=0) -> Tensor[]");
    QCOMPARE(l.returns.size(), size_t(1));
    QVERIFY(l.returns[0].type.list);
    QVERIFY(l.returns[0].type.isTensorLike());
    auto out = parsed("unbind_copy.int_out(Tensor self, int dim=0, *, Tensor(a!)[] out) -> ()");
    QVERIFY(out.returns.empty());
    QVERIFY(out.isOutVariant());
    QVERIFY(out.arguments[2].type.list);
    QCOMPARE(q(out.arguments[2].toString()), QString("Tensor(a!)[] out"));
    auto none = parsed("_assert_async.msg(Tensor self, str assert_msg) -> ()");
    QVERIFY(none.returns.empty());
    QVERIFY(none.arguments[1].type.base == SchemaType::Base::Str);
    QCOMPARE(q(none.toString()), QString("aten::_assert_async.msg(Tensor self, str assert_msg) -> ()"));
  }

  void parsesQuotedAndListDefaults() {
    auto s = parsed("f(Tensor self, int[1] dim=[-2, -1], str pad_mode=\"reflect\", str s=\"a,\\\")b\", "
                    "str t='x', float eps=1e-05, SymFloat y=0.5) -> Tensor");
    QCOMPARE(q(*s.arguments[1].defaultValue), QString("[-2, -1]"));
    QCOMPARE(q(*s.arguments[2].defaultValue), QString("\"reflect\""));
    QCOMPARE(q(*s.arguments[3].defaultValue), QString("\"a,\\\")b\""));
    QCOMPARE(q(*s.arguments[4].defaultValue), QString("'x'"));
    QCOMPARE(q(*s.arguments[5].defaultValue), QString("1e-05"));
    QVERIFY(s.arguments[6].type.base == SchemaType::Base::Other);
    QCOMPARE(q(s.arguments[6].type.spelling), QString("SymFloat"));
    QCOMPARE(parsed(s.toString()), s);
  }

  void tellsInplaceOps() {
    QVERIFY(parsed("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)").isInplace());
    QVERIFY(parsed("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)").isInplace());
    QVERIFY(!parsed("__and__.Tensor(Tensor self, Tensor other) -> Tensor").isInplace());
    // A mutable op that is not named in-place (running stats are written).
    auto bn = parsed("_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, "
                     "Tensor(b!) running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)");
    QVERIFY(!bn.isInplace());
    QVERIFY(!bn.isOutVariant());
    // A keyword-only written argument alone does not make an out variant: the returns
    // must alias the outs, not be fresh tensors or alias other arguments.
    QVERIFY(!parsed("f(Tensor self, *, Tensor(a!) buf) -> Tensor").isOutVariant());
    QVERIFY(!parsed("f(Tensor(a!) self, *, Tensor(b!) out) -> Tensor(a!)").isOutVariant());
    QVERIFY(parsed("f(Tensor self, *, Tensor(a!) out) -> (Tensor(a!), SymInt)").isOutVariant());
  }

  void toleratesBlanks() {
    auto s = parsed("  aten::add.out( Tensor self ,Tensor other, * , Scalar alpha = 1, Tensor (a!) out )->Tensor(a!)  ");
    QCOMPARE(q(s.toString()),
             QString("aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)"));
  }

  void malformedSchemasNameTheOffset_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("offset");
    auto row = [](const char* tag, std::string text, size_t at) {
      QTest::newRow(tag) << QString::fromStdString(text) << int(at);
    };
    std::string t;
    row("empty", "", 0);
    row("no name", "(Tensor self) -> Tensor", 0);
    t = "add.Tensor(Tensor self, Tensor other";
    row("unclosed arguments", t, t.size());
    t = "add.Tensor(Tensor self) Tensor";
    row("no arrow", t, t.find(" Tensor") + 1);
    t = "add(Tensor self, Tensor self) -> Tensor";
    row("repeated name", t, t.rfind("self"));
    t = "add(Tensor(a! self) -> Tensor";
    row("unclosed annotation", t, t.find("self"));
    t = "add(int[2 x) -> Tensor";
    row("unclosed list", t, t.find(" x"));
    t = "add(Tensor self, *) -> Tensor";
    row("star last", t, t.find("*)") + 1);
    t = "add(Tensor self, *, *, int x) -> Tensor";
    row("two stars", t, t.rfind("*"));
    t = "add(Tensor self=) -> Tensor";
    row("empty default", t, t.find(")"));
    t = "add(Tensor self) -> (Tensor, Tensor";
    row("unclosed returns", t, t.size());
    t = "add(Tensor self) -> Tensor extra junk";
    row("trailing text", t, t.find("junk"));
    t = "add(str s=\"abc) -> Tensor";
    row("unclosed string", t, t.find("\""));
    t = "add(Tensor self) -> Tensor x=1";
    row("return default", t, t.find("="));
    t = "add(Tensor[][] x) -> Tensor";
    row("list of lists", t, t.find("[]") + 2);
    t = "add(Tensor self, int[0] x) -> Tensor";
    row("zero size", t, t.find("0]"));
    t = "add(Tensor) -> Tensor";
    row("no argument name", t, t.find(")"));
    t = "aten::.Tensor(Tensor self) -> Tensor";
    row("no name after ns", t, t.find("."));
  }

  void malformedSchemasNameTheOffset() {
    QFETCH(QString, text);
    QFETCH(int, offset);
    std::string s = text.toStdString();
    auto r = parseSchema(s);
    QVERIFY(!r.ok());
    QVERIFY(r.error().code == ErrorCode::Invalid);
    QVERIFY(r.error().offset.has_value());
    QCOMPARE(int(*r.error().offset), offset);
    QVERIFY(!r.error().expected.empty());
    QVERIFY(r.error().message().find("at byte " + std::to_string(offset)) != std::string::npos);
  }

  void builtinTableLoadsCleanly() {
    const auto& reg = OpRegistry::builtin();
    for (const auto& e : reg.loadErrors()) qWarning("%s", e.c_str());
    QVERIFY(reg.loadErrors().empty());
    QCOMPARE(reg.size(), detail::builtinSchemaTable().size());
    QVERIFY2(reg.size() >= 950 && reg.size() <= 1400, std::to_string(reg.size()).c_str());
    size_t core = 0, portable = 0, quantized = 0, prim = 0;
    for (const auto& s : reg.schemas()) {
      core += reg.isCoreAten(s);
      portable += reg.hasPortableKernel(s);
      quantized += reg.hasQuantizedKernel(s);
      prim += reg.hasPrimKernel(s);
    }
    qInfo("builtin registry: %zu schemas, %zu core ATen, %zu portable kernels, %zu quantized kernels, %zu prim ops",
          reg.size(), core, portable, quantized, prim);
    QVERIFY2(core >= 225 && core <= 280, std::to_string(core).c_str());
    QCOMPARE(portable, size_t(209));   // 200 `op:` + 9 `func:` entries in kernels/portable/functions.yaml
    QCOMPARE(quantized, size_t(19));   // every entry of kernels/quantized/quantized.yaml
    QCOMPARE(prim, size_t(28));        // 25 executorch_prim + sym_size.int, sym_numel, _local_scalar_dense
  }

  void everyBuiltinSchemaRoundTrips() {
    const auto& reg = OpRegistry::builtin();
    auto table = detail::builtinSchemaTable();
    size_t i = 0;
    for (const auto& s : reg.schemas()) {
      std::string text = s.toString();
      // The table is written in canonical form, so printing gives back the same text.
      QCOMPARE(q(text), QString(table[i++].text));
      auto again = parseSchema(text);
      QVERIFY2(again.ok(), text.c_str());
      QVERIFY2(*again == s, text.c_str());
    }
  }

  void parsingTheWholeTableIsFast() {
    auto table = detail::builtinSchemaTable();
    QElapsedTimer timer;
    timer.start();
    size_t ok = 0;
    for (const auto& e : table) ok += parseSchema(e.text).ok();
    qint64 ns = timer.nsecsElapsed();
    QCOMPARE(ok, table.size());
    qInfo("parsed %zu schemas in %.2f ms", table.size(), double(ns) / 1e6);
  }

  void builtinIsSharedAcrossThreads() {
    std::atomic<const OpRegistry*> seen[4] = {};
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i)
      threads.emplace_back([&seen, i] { seen[i] = &OpRegistry::builtin(); });
    for (auto& t : threads) t.join();
    for (int i = 0; i < 4; ++i) QCOMPARE(seen[i].load(), &OpRegistry::builtin());
  }

  void findsEveryTargetSpelling() {
    const auto& reg = OpRegistry::builtin();
    const OpSchema* add = reg.find("aten::add", "Tensor");
    QVERIFY(add);
    QCOMPARE(q(add->toString()), QString("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"));
    for (const char* t : {"aten::add.Tensor", "aten.add.Tensor", "torch.ops.aten.add.Tensor", "add.Tensor",
                          "executorch_exir_dialects_edge__ops_aten_add_Tensor", "exir_ops.edge.aten.add.Tensor"})
      QVERIFY2(reg.findByTarget(t) == add, t);

    const OpSchema* conv = reg.find("aten::convolution", "");
    QVERIFY(conv);
    QCOMPARE(reg.find("aten::convolution", "default"), conv);
    for (const char* t : {"aten::convolution", "aten.convolution.default", "torch.ops.aten.convolution.default",
                          "convolution", "executorch_exir_dialects_edge__ops_aten_convolution_default"})
      QVERIFY2(reg.findByTarget(t) == conv, t);

    struct Case {
      const char* target;
      const char* qualified;
    };
    const Case cases[] = {
        {"executorch_exir_dialects_edge__ops_aten__to_copy_default", "aten::_to_copy"},
        {"executorch_exir_dialects_edge__ops_aten_sum_dim_IntList", "aten::sum.dim_IntList"},
        {"executorch_exir_dialects_edge__ops_aten_add__Tensor", "aten::add_.Tensor"},
        {"executorch_exir_dialects_edge__ops_aten_max_pool2d_with_indices_default", "aten::max_pool2d_with_indices"},
        {"executorch_exir_dialects_edge__ops_aten_native_layer_norm_default", "aten::native_layer_norm"},
        {"executorch_exir_dialects_edge__ops_dim_order_ops__to_dim_order_copy_default",
         "dim_order_ops::_to_dim_order_copy"},
        {"executorch_exir_dialects_edge__ops_quantized_decomposed_quantize_per_tensor_default",
         "quantized_decomposed::quantize_per_tensor"},
        {"executorch_exir_dialects_edge__ops_quantized_decomposed_dequantize_per_tensor_tensor",
         "quantized_decomposed::dequantize_per_tensor.tensor"},
        {"executorch_exir_dialects_backend__ops_executorch_prim_add_Scalar", "executorch_prim::add.Scalar"},
        {"torch.ops.quantized_decomposed.dequantize_per_channel.default", "quantized_decomposed::dequantize_per_channel"},
        {"quantized_decomposed.choose_qparams.tensor", "quantized_decomposed::choose_qparams.tensor"},
        {"dim_order_ops::_clone_dim_order.out", "dim_order_ops::_clone_dim_order.out"},
        {"executorch_prim::et_view.default", "executorch_prim::et_view"},
        {"aten::sym_size.int", "aten::sym_size.int"},
        {"torch.ops.aten.sym_numel.default", "aten::sym_numel"},
        {"aten._assert_async.msg", "aten::_assert_async.msg"},
        {"aten::_assert_scalar", "aten::_assert_scalar"},
        {"aten::sym_constrain_range_for_size", "aten::sym_constrain_range_for_size"},
        {"aten::_local_scalar_dense", "aten::_local_scalar_dense"},
        {"aten::index_put_", "aten::index_put_"},
        {"aten::copy_", "aten::copy_"},
        {"aten::add_.Tensor", "aten::add_.Tensor"},
        {"aten::view_copy", "aten::view_copy"},
        {"aten::permute_copy.out", "aten::permute_copy.out"},
        {"aten::expand_copy", "aten::expand_copy"},
        {"aten::select_copy.int", "aten::select_copy.int"},
        {"aten::slice_copy.Tensor", "aten::slice_copy.Tensor"},
        {"aten::squeeze_copy.dims", "aten::squeeze_copy.dims"},
        {"aten::unsqueeze_copy", "aten::unsqueeze_copy"},
        {"aten::t_copy", "aten::t_copy"},
        {"aten::transpose_copy.int", "aten::transpose_copy.int"},
        {"aten::alias_copy", "aten::alias_copy"},
        {"aten::as_strided_copy", "aten::as_strided_copy"},
        {"aten::unbind_copy.int_out", "aten::unbind_copy.int_out"},
        {"aten::split_copy.Tensor", "aten::split_copy.Tensor"},
        {"aten::split_with_sizes_copy.out", "aten::split_with_sizes_copy.out"},
        {"aten::diagonal_copy", "aten::diagonal_copy"},
        {"aten::linear", "aten::linear"},
        {"aten::scaled_dot_product_attention", "aten::scaled_dot_product_attention"},
        {"aten::layer_norm", "aten::layer_norm"},
        {"aten::matmul", "aten::matmul"},
        {"aten::silu", "aten::silu"},
        {"aten::gelu", "aten::gelu"},
        {"aten::dropout", "aten::dropout"},
        {"aten::batch_norm", "aten::batch_norm"},
        {"quantized_decomposed::quantize_per_channel.out", "quantized_decomposed::quantize_per_channel.out"},
        {"dim_order_ops::_empty_dim_order.out", "dim_order_ops::_empty_dim_order.out"},
    };
    for (const auto& c : cases) {
      const OpSchema* s = reg.findByTarget(c.target);
      QVERIFY2(s, c.target);
      QCOMPARE(q(s->qualifiedName()), QString(c.qualified));
    }
    for (const char* t : {"aten::add", "aten.add", "aten.nonexistent.Tensor", "", "a..b", "aten.add.Tensor.x",
                          "executorch_exir_dialects_edge__ops_aten_add", "executorch_exir_dialects_edge__ops_nope_add_Tensor",
                          "executorch_exir_dialects_edge__ops_aten_add_"})
      QVERIFY2(reg.findByTarget(t) == nullptr, t);
  }

  void coreAtenMembership() {
    const auto& reg = OpRegistry::builtin();
    for (const char* t : {"aten::add.Tensor", "aten::convolution", "aten::addmm",
                          "aten::_native_batch_norm_legit_no_training",
                          "aten::view_copy", "aten::permute_copy", "aten::sym_size.int", "aten::_to_copy"})
      QVERIFY2(reg.isCoreAten(op(t)), t);
    for (const char* t : {"aten::linear", "aten::conv2d", "aten::layer_norm", "aten::scaled_dot_product_attention",
                          "aten::add.out", "aten::add_.Tensor", "aten::reshape", "quantized_decomposed::quantize_per_tensor",
                          "dim_order_ops::_to_dim_order_copy"})
      QVERIFY2(!reg.isCoreAten(op(t)), t);
    // A schema built elsewhere is judged by its name.
    QVERIFY(reg.isCoreAten(parsed("aten::addmm(Tensor self, Tensor mat1, Tensor mat2) -> Tensor")));
    QVERIFY(!reg.isCoreAten(parsed("aten::not_an_op(Tensor self) -> Tensor")));
  }

  void kernelLibraries() {
    const auto& reg = OpRegistry::builtin();
    QVERIFY(reg.hasPortableKernel(op("aten::add.out")));
    QVERIFY(reg.hasPortableKernel(op("aten::native_layer_norm.out")));
    QVERIFY(reg.hasPortableKernel(op("aten::index_put_")));
    QVERIFY(reg.hasPortableKernel(op("dim_order_ops::_to_dim_order_copy.out")));
    QVERIFY(reg.hasPortableKernel(op("aten::bitwise_left_shift.Tensor_out")));
    QVERIFY(!reg.hasPortableKernel(op("aten::add.Tensor")));
    QVERIFY(!reg.hasPortableKernel(op("aten::linear.out")));
    const OpSchema& q8 = op("quantized_decomposed::quantize_per_tensor.out");
    QVERIFY(!reg.hasPortableKernel(q8));
    QVERIFY(reg.hasQuantizedKernel(q8));
    QVERIFY(reg.hasPrimKernel(op("executorch_prim::add.Scalar")));
    QVERIFY(reg.hasPrimKernel(op("aten::sym_size.int")));
    QVERIFY(!reg.hasPrimKernel(op("aten::add.Tensor")));
    // Every portable kernel is an out variant or an in-place op.
    for (const auto& s : reg.schemas())
      if (reg.hasPortableKernel(s) || reg.hasQuantizedKernel(s))
        QVERIFY2(s.isOutVariant() || s.isInplace(), s.toString().c_str());
  }

  void outVariants() {
    const auto& reg = OpRegistry::builtin();
    struct Case {
      const char* functional;
      const char* out;
    };
    const Case cases[] = {
        {"aten::add.Tensor", "aten::add.out"},
        {"aten::add.Scalar", "aten::add.Scalar_out"},
        {"aten::_to_copy", "aten::_to_copy.out"},  // TensorOptions are dropped
        {"aten::empty.memory_format", "aten::empty.out"},
        {"aten::native_layer_norm", "aten::native_layer_norm.out"},
        {"aten::max.dim", "aten::max.dim_max"},
        {"aten::topk", "aten::topk.values"},
        {"aten::_native_batch_norm_legit", "aten::_native_batch_norm_legit.out"},  // a mutable op
        {"aten::split_copy.Tensor", "aten::split_copy.Tensor_out"},
        {"aten::view_copy", "aten::view_copy.out"},
        {"aten::linear", "aten::linear.out"},
        {"aten::mean.dim", "aten::mean.out"},
        {"quantized_decomposed::dequantize_per_tensor.tensor", "quantized_decomposed::dequantize_per_tensor.Tensor_out"},
        {"quantized_decomposed::choose_qparams.tensor", "quantized_decomposed::choose_qparams.Tensor_out"},
        {"dim_order_ops::_to_dim_order_copy", "dim_order_ops::_to_dim_order_copy.out"},
        {"aten::add.out", "aten::add.out"},  // an out variant is its own
    };
    for (const auto& c : cases) {
      const OpSchema* o = reg.outVariant(op(c.functional));
      QVERIFY2(o, c.functional);
      QCOMPARE(q(o->qualifiedName()), QString(c.out));
    }
    const OpSchema* pool = reg.outVariant(op("aten::max_pool2d_with_indices"));
    QVERIFY(pool);
    QCOMPARE(q(pool->qualifiedName()), QString("aten::max_pool2d_with_indices.out"));
    std::vector<std::string> outs;
    for (const auto& a : pool->arguments)
      if (a.kwargOnly && a.isWrite) outs.push_back(a.name);
    QCOMPARE(outs, (std::vector<std::string>{"out", "indices"}));
    QCOMPARE(pool->returns.size(), size_t(2));
    QVERIFY(reg.outVariant(op("aten::sym_size.int")) == nullptr);
    QVERIFY(reg.outVariant(op("executorch_prim::add.Scalar")) == nullptr);
    // Same name, different arguments: no out variant.
    QVERIFY(reg.outVariant(parsed("aten::add.Tensor(Tensor self, Tensor other, *, Scalar beta=1) -> Tensor")) == nullptr);

    // Every core op that returns new tensors (not views, not in-place) has an out variant.
    std::vector<std::string> missing;
    for (const auto& s : reg.schemas()) {
      if (!reg.isCoreAten(s) || s.isOutVariant() || s.isInplace() || s.returns.empty()) continue;
      bool fresh = std::all_of(s.returns.begin(), s.returns.end(),
                               [](const auto& r) { return r.type.isTensorLike() && r.aliasSet.empty(); });
      if (fresh && !reg.outVariant(s)) missing.push_back(s.qualifiedName());
    }
    QCOMPARE(missing, std::vector<std::string>{});
  }
};

QTEST_GUILESS_MAIN(TestOpSchema)
#include "tst_opschema.moc"
