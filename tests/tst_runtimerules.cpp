// Export refuses a program ExecuTorch's runtime would refuse (issue 42): an operator no kernel
// library registers (load: OperatorMissing), a kernel whose dim-order check fails (execute:
// InvalidArgument), a planned tensor past its arena. Each case breaks one rule in the lowered
// mlp sample, which exports cleanly as it is; the interpreter refuses the same call.
#include <QTemporaryDir>
#include <QtTest>

#include "engine/formats/OpenProgram.h"
#include "engine/formats/Pt2Writer.h"
#include "engine/lowering/Export.h"
#include "engine/lowering/Pipeline.h"
#include "engine/run/KernelRules.h"
#include "engine/samples/SampleZoo.h"

using namespace lstudio;

namespace {

/// The mlp sample lowered to the end (planned, not yet emitted).
Program loweredMlp(const QString& dir) {
  auto built = buildSample("mlp");
  if (!built) qFatal("%s", built.error().message().c_str());
  const std::string pt2 = (dir + "/mlp.pt2").toStdString();
  if (!writePt2(built.value(), pt2)) qFatal("cannot write the sample");
  auto opened = openProgramFile(pt2);
  if (!opened) qFatal("%s", opened.error().message().c_str());
  Pipeline p(std::make_shared<const Program>(std::move(opened.value())), ExecutorchBackendConfig{});
  p.runToEnd();
  if (p.failed()) qFatal("the mlp sample does not lower");
  return *p.current();
}

/// The first kernel call of `m` on `op` (a name prefix), or -1.
int callOf(const Method& m, const std::string& op) {
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (m.nodes[i].kind == NodeKind::Kernel && m.nodes[i].op >= 0 && m.operators[m.nodes[i].op].name.rfind(op, 0) == 0)
      return static_cast<int>(i);
  return -1;
}

}  // namespace

class TestRuntimeRules : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void cleanProgramExports() {
    auto out = exportToFiles(loweredMlp(dir_.path()), {}, (dir_.path() + "/clean.pte").toStdString());
    QVERIFY2(out, out ? "" : out.error().message().c_str());
  }

  // ConvNeXt's class: a result laid out channels-last-like while its input is contiguous.
  void dimOrderMismatchIsRefused() {
    Program p = loweredMlp(dir_.path());
    Method& m = p.methods[0];
    const int call = callOf(m, "aten::addmm");
    QVERIFY(call >= 0);
    TensorSpec* out = std::get_if<TensorSpec>(&m.values[m.nodes[call].outputs.at(0)].payload);
    QVERIFY(out && out->sizes.size() == 2);
    out->dimOrder = {1, 0};
    const std::string pte = (dir_.path() + "/dim_order.pte").toStdString();
    auto r = exportToFiles(p, {}, pte);
    QVERIFY(!r);
    QCOMPARE(r.error().code, ErrorCode::RuntimeRule);
    const std::string msg = r.error().message();
    QVERIFY2(msg.find("aten::addmm.out") != std::string::npos && msg.find("all contiguous or all channels-last") != std::string::npos,
             msg.c_str());
    QVERIFY(!QFile::exists(QString::fromStdString(pte)));  // nothing written
  }

  void unregisteredOperatorIsRefused() {
    Program p = loweredMlp(dir_.path());
    Method& m = p.methods[0];
    const int call = callOf(m, "aten::addmm");
    QVERIFY(call >= 0);
    m.operators[m.nodes[call].op].name = "aten::addmm_fused_by_hand";
    auto r = exportToFiles(p, {}, (dir_.path() + "/missing.pte").toStdString());
    QVERIFY(!r);
    QCOMPARE(r.error().code, ErrorCode::RuntimeRule);
    QVERIFY2(r.error().message().find("OperatorMissing") != std::string::npos, r.error().message().c_str());
    // A custom library's operator is the user's to link: not refused.
    OperatorRef custom{"my_ops::fused", "out"};
    QVERIFY(runtimeHasKernel(custom));
    QVERIFY(!runtimeHasKernel(OperatorRef{"aten::frobnicate", "out"}));
    QVERIFY(runtimeHasKernel(OperatorRef{"aten::addmm", "out"}));
  }

  // torch's col2im decomposition (nn.Fold with a padding: timm's volo) cuts the padding off with
  // a negative constant_pad_nd, which the portable kernel refuses.
  void negativePaddingIsRefused() {
    Program p = loweredMlp(dir_.path());
    Method& m = p.methods[0];
    const int call = callOf(m, "aten::addmm");
    QVERIFY(call >= 0);
    m.operators[m.nodes[call].op] = OperatorRef{"aten::constant_pad_nd", "out"};
    const auto minusOne = static_cast<ValueId>(m.values.size());
    m.values.push_back(Value{int64_t(-1), {}});
    IntList pads;
    pads.items = {minusOne, minusOne};
    m.values.push_back(Value{pads, {}});
    m.nodes[call].args.at(1) = minusOne + 1;
    auto why = kernelRuleViolation(m, m.nodes[call]);
    QVERIFY(why);
    QVERIFY2(why->find("negative padding (-1)") != std::string::npos, why->c_str());
    m.values[minusOne] = Value{int64_t(1), {}};  // padding outward is the kernel's job
    QVERIFY(!kernelRuleViolation(m, m.nodes[call]));
  }

  void tensorPastItsArenaIsRefused() {
    Program p = loweredMlp(dir_.path());
    Method& m = p.methods[0];
    QVERIFY(m.nonConstBufferSizes.size() > 1 && m.nonConstBufferSizes[1] > 16);
    m.nonConstBufferSizes[1] = 16;
    auto r = exportToFiles(p, {}, (dir_.path() + "/arena.pte").toStdString());
    QVERIFY(!r);
    QCOMPARE(r.error().code, ErrorCode::RuntimeRule);
    QVERIFY2(r.error().message().find("past an arena of 16 bytes") != std::string::npos, r.error().message().c_str());
  }

  void loweredCallKeepsTheRule() {
    Program p = loweredMlp(dir_.path());
    Method& m = p.methods[0];
    const int call = callOf(m, "aten::addmm");
    Node n = m.nodes[call];
    QVERIFY(!kernelRuleViolation(m, n));  // as lowered: all contiguous
  }

 private:
  QTemporaryDir dir_;
};

QTEST_GUILESS_MAIN(TestRuntimeRules)
#include "tst_runtimerules.moc"
