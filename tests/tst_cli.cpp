// lowering-cli: commands, exit codes, messages and the JSON document.
#include <QProcess>
#include <QTemporaryDir>
#include <QTemporaryFile>
#include <QtTest>

#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/Cli.h"
#include "engine/planning/MemoryPlanAnalysis.h"
#include "engine/formats/PtdReader.h"
#include "engine/formats/PteReader.h"
#include "tests/TestSupport.h"

using namespace lstudio;
using namespace lstudio::test;

namespace {
struct Run {
  int code;
  std::string out, err;
};
Run runCli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int code = cli::run(args, out, err);
  return {code, out.str(), err.str()};
}
}  // namespace

class TestCli : public QObject {
  Q_OBJECT
 private slots:
  void usageErrors() {
    QCOMPARE(runCli({}).code, 2);
    QCOMPARE(runCli({"frobnicate"}).code, 2);
    QCOMPARE(runCli({"inspect"}).code, 2);
    QCOMPARE(runCli({"inspect", "a.pte", "--bogus"}).code, 2);
    QCOMPARE(runCli({"inspect", "a.pte", "--ptd"}).code, 2);
    Run h = runCli({"--help"});
    QCOMPARE(h.code, 0);
    QVERIFY(h.out.find("inspect FILE") != std::string::npos);
    QVERIFY(runCli({"--version"}).out.rfind("lowering-cli ", 0) == 0);
  }

  // Every command answers --help with its own text (it once said "bad argument near '--help'").
  void everyCommandTakesHelp() {
    for (const char* cmd : {"inspect", "plan", "export", "config", "sample", "lower"}) {
      Run r = runCli({cmd, "--help"});
      QCOMPARE(r.code, 0);
      QVERIFY2(r.out.find(std::string("  ") + cmd + " ") != std::string::npos, cmd);
      QVERIFY2(r.out.find("  inspect FILE") == std::string::npos || std::string(cmd) == "inspect", cmd);
      QCOMPARE(runCli({cmd, "x.pte", "-h"}).code, 0);
    }
  }

  // lower --print-diff: after a changed pass, only what changed; the text
  // defines every name it uses (views lowering made windows on their base
  // are printed where they are first read), and an out call shows its out once.
  void lowerPrintsDiffsAndDefinesEveryName() {
    QTemporaryDir dir;
    std::string pt2 = (dir.path() + "/mv2.pt2").toStdString();
    QCOMPARE(runCli({"sample", "mobilenet_v2", "-o", pt2}).code, 0);
    Run d = runCli({"lower", pt2, "--print-diff"});
    QCOMPARE(d.code, 0);
    QVERIFY(d.out.find("method forward: ") != std::string::npos);
    QVERIFY(d.out.find("\n  + %") != std::string::npos);
    QVERIFY(d.out.find("\n  - %") != std::string::npos);
    QVERIFY(d.out.find("\n  %") == std::string::npos);  // no whole graph
    Run all = runCli({"lower", pt2, "--print-after-all"});
    QCOMPARE(all.code, 0);
    std::string last = all.out.substr(all.out.rfind("method forward("));
    last = last.substr(0, last.find("  return ("));
    std::istringstream lines(last);
    std::set<std::string> defined;
    std::string line;
    size_t views = 0, checked = 0;
    auto names = [](const std::string& text) {
      std::vector<std::string> out;
      for (size_t p = text.find('%'); p != std::string::npos; p = text.find('%', p + 1)) {
        size_t e = p + 1;
        while (e < text.size() && (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_' || text[e] == '.')) ++e;
        out.push_back(text.substr(p, e - p));
      }
      return out;
    };
    while (std::getline(lines, line)) {
      size_t eq = line.find(" = ");
      if (line.rfind("method ", 0) == 0) {
        for (const auto& n : names(line)) defined.insert(n);
        continue;
      }
      std::string lhs = eq == std::string::npos ? "" : line.substr(0, eq), rhs = eq == std::string::npos ? line : line.substr(eq);
      for (const auto& n : names(lhs)) defined.insert(n);
      for (const auto& n : names(rhs)) {
        ++checked;
        QVERIFY2(defined.count(n), (n + " is used before it is defined in: " + line).c_str());
      }
      views += rhs.rfind(" = view(%", 0) == 0;
      QVERIFY2(line.find(", %") == std::string::npos || line.find("out=") == std::string::npos ||
                   line.find("out=" + names(lhs).at(0) + ", " + names(lhs).at(0)) == std::string::npos,
               line.c_str());
    }
    QVERIFY(checked > 100);
    QVERIFY(views > 0);  // mobilenet_v2's flatten is a removed view
  }

  void unreadableFiles() {
    Run r = runCli({"inspect", "/nonexistent/model.pte"});
    QCOMPARE(r.code, 3);
    QVERIFY(r.err.find("/nonexistent/model.pte") != std::string::npos);
    QTemporaryFile f;
    QVERIFY(f.open());
    f.write("this is not a program at all");
    f.flush();
    r = runCli({"inspect", f.fileName().toStdString()});
    QCOMPARE(r.code, 3);
    QVERIFY(r.err.find(f.fileName().toStdString()) != std::string::npos);
    QVERIFY(r.err.find("at byte 4") != std::string::npos);
    QVERIFY(r.err.find("expected \"ET12\"") != std::string::npos);
  }

  void jsonDocument() {
    LSTUDIO_REQUIRE_FIXTURES();
    Run r = runCli({"inspect", fixture("pte/djl_stress_mlp.pte").toStdString(), "--json"});
    QCOMPARE(r.code, 0);
    auto j = nlohmann::json::parse(r.out);
    QCOMPARE(j["identifier"].get<std::string>(), std::string("ET12"));
    const auto& m = j["methods"][0];
    QCOMPARE(m["name"].get<std::string>(), std::string("forward"));
    QCOMPARE(m["instructions"].get<int>(), 14);
    QCOMPARE(m["values"].get<int>(), 44);
    QVERIFY(m["operators"].is_array() && !m["operators"].empty());
    for (const auto& op : m["operators"]) {
      QVERIFY(op.contains("name") && op.contains("overload") && op.contains("count"));
    }
    QCOMPARE(m["delegates"].size(), size_t(2));
    QCOMPARE(m["delegates"][0]["id"].get<std::string>(), std::string("XnnpackBackend"));
    QVERIFY(m["delegates"][0]["bytes"].get<uint64_t>() > 0);
    QCOMPARE(m["arenas"].size(), size_t(1));
    QCOMPARE(m["arenas"][0]["mem_id"].get<int>(), 1);
    QCOMPARE(m["arenas"][0]["size"].get<uint64_t>(), uint64_t(100416));
    QVERIFY(m["arenas"][0]["lower_bound"].get<uint64_t>() <= uint64_t(100416));
  }

  void externalData() {
    LSTUDIO_REQUIRE_FIXTURES();
    std::string pte = fixture("pte/linear.pte").toStdString();
    Run r = runCli({"inspect", pte});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.find("unresolved external tensors: 2") != std::string::npos);
    r = runCli({"inspect", pte, "--ptd", fixture("ptd/linear.ptd").toStdString()});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.find("unresolved") == std::string::npos);
    r = runCli({"inspect", pte, "--ptd", fixture("ptd/xor.ptd").toStdString()});
    QCOMPARE(r.code, 3);
    QVERIFY(r.err.find("linear.weight") != std::string::npos || r.err.find("linear.bias") != std::string::npos);
  }

  void exportArchives() {
    LSTUDIO_REQUIRE_FIXTURES();
    Run r = runCli({"inspect", fixture("pt2/linear.pt2").toStdString(), "--json"});
    QCOMPARE(r.code, 0);
    auto j = nlohmann::json::parse(r.out);
    QCOMPARE(j["format"].get<std::string>(), std::string("pt2"));
    const auto& m = j["methods"][0];
    QCOMPARE(m["name"].get<std::string>(), std::string("forward"));
    QCOMPARE(m["nodes"].get<int>(), 1);
    QCOMPARE(m["operators"][0]["name"].get<std::string>(), std::string("aten::linear"));
    QCOMPARE(m["signature"]["inputs"].size(), size_t(3));
    QCOMPARE(m["signature"]["inputs"][0]["kind"].get<std::string>(), std::string("parameter"));
    QCOMPARE(m["signature"]["inputs"][0]["target"].get<std::string>(), std::string("linear.weight"));
    QCOMPARE(m["signature"]["inputs"][0]["bytes"].get<int>(), 36);
    QCOMPARE(m["weight_bytes"].get<int>(), 48);
    r = runCli({"inspect", fixture("pt2/aoti_package_preprocess.pt2").toStdString()});
    QCOMPARE(r.code, 3);
    QVERIFY(r.err.find("AOTInductor") != std::string::npos);
  }

  void planCommand() {
    LSTUDIO_REQUIRE_FIXTURES();
    QCOMPARE(runCli({"plan"}).code, 2);
    QCOMPARE(runCli({"plan", "x.pte", "--algorithm", "magic"}).code, 2);
    QCOMPARE(runCli({"plan", "x.pte", "--alignment", "12"}).code, 2);
    Run pt2 = runCli({"plan", fixture("pt2/linear.pt2").toStdString(), "--json"});  // lowered first
    QCOMPARE(pt2.code, 0);
    QVERIFY(nlohmann::json::parse(pt2.out)["methods"][0]["arenas"][0]["stored"].is_null());
    QTemporaryDir dir;
    std::string trace = (dir.path() + "/t.json").toStdString(), csv = (dir.path() + "/t.csv").toStdString();
    Run r = runCli({"plan", fixture("pte/xor.pte").toStdString(), "--json", "--trace", trace, "--csv", csv});
    QCOMPARE(r.code, 0);
    auto j = nlohmann::json::parse(r.out);
    const auto& m = j["methods"][0];
    QCOMPARE(m["name"].get<std::string>(), std::string("forward"));
    const auto& a = m["arenas"][0];
    QCOMPARE(a["mem_id"].get<int>(), 1);
    QCOMPARE(a["stored"].get<int>(), 624);
    QVERIFY(a["planned"].get<int>() <= 624);
    QCOMPARE(a["lower_bound"].get<int>(), 560);
    QVERIFY(!a["peak_tensors"].empty());
    QVERIFY(nlohmann::json::parse(readAll(QString::fromStdString(trace)).toStdString()).contains("traceEvents"));
    QVERIFY(readAll(QString::fromStdString(csv)).startsWith("method,mem_id,value"));
    r = runCli({"plan", fixture("pte/xor.pte").toStdString(), "--algorithm", "naive"});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.find("planned 2304") != std::string::npos);  // no reuse: every tensor side by side
  }

  void dataFiles() {
    LSTUDIO_REQUIRE_FIXTURES();
    Run r = runCli({"inspect", fixture("ptd/xor.ptd").toStdString(), "--json"});
    QCOMPARE(r.code, 0);
    auto j = nlohmann::json::parse(r.out);
    QCOMPARE(j["format"].get<std::string>(), std::string("ptd"));
    QVERIFY(!j["entries"].empty());
    QVERIFY(j["entries"][0].contains("key"));
  }

  void exportCommand() {
    LSTUDIO_REQUIRE_FIXTURES();
    QTemporaryDir dir;
    QCOMPARE(runCli({"export", fixture("pte/dnf.pte").toStdString()}).code, 2);  // no -o
    std::string cfg = (dir.path() + "/naive.json").toStdString();
    QFile f(QString::fromStdString(cfg));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"memory_planning_pass\": {\"algorithms\": [\"naive\"]}, \"segment_alignment\": 4096}");
    f.close();
    std::string out = (dir.path() + "/dnf.pte").toStdString();
    Run r = runCli({"export", fixture("pte/dnf.pte").toStdString(), "--config", cfg, "-o", out});
    QCOMPARE(r.code, 0);
    auto p = readProgramFile(out);
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    for (const Segment& seg : p->segments) QCOMPARE(seg.offset % 4096, uint64_t(0));  // segment_alignment
    int64_t naive = 0;  // no reuse: every planned tensor has its own bytes (16-byte aligned)
    std::set<uint64_t> offsets;
    for (const Value& v : p->methods[0].values)
      if (auto* t = v.tensorIf(); t && t->slot && t->viewOf == kNoValue && offsets.insert(t->slot->offset).second)
        naive += (int64_t(t->nbytes().value_or(0)) + 15) / 16 * 16;
    QCOMPARE(p->methods[0].nonConstBufferSizes[1], naive);
    QCOMPARE(p->methods[1].nonConstBufferSizes.size(), size_t(1));  // getters keep their single entry
    auto report = analyzeMemoryPlan(p->methods[0]);
    QVERIFY(report.overlapFree());
    // The default config re-plans with the suite: never above what ExecuTorch stored.
    r = runCli({"export", fixture("pte/xor.pte").toStdString(), "--ptd", fixture("ptd/xor.ptd").toStdString(), "-o",
                (dir.path() + "/xor.pte").toStdString(), "--ptd-dir", (dir.path() + "/data").toStdString()});
    QCOMPARE(r.code, 0);
    auto x = readProgramFile((dir.path() + "/xor.pte").toStdString());
    QVERIFY(x.ok());
    QCOMPARE(x->methods[0].nonConstBufferSizes[1], int64_t(608));  // stored: 624
    auto d = readDataFile((dir.path() + "/data/xor.ptd").toStdString());
    QVERIFY(d.ok());
    QVERIFY(resolveExternalTensors(x.value(), {d.value()}).ok());
    // A torch.export archive is lowered and emitted: the user's input only, the weights as constants.
    r = runCli({"export", fixture("pt2/linear.pt2").toStdString(), "-o", out});
    QCOMPARE(r.code, 0);
    auto l = readProgramFile(out);
    QVERIFY2(l.ok(), l.ok() ? "" : l.error().message().c_str());
    QCOMPARE(l->methods[0].inputs.size(), size_t(1));
    QCOMPARE(l->constants.size(), size_t(3));  // the placeholder, weight and bias
    QVERIFY2(r.out.find("2 constant tensors in the .pte (2 distinct buffers)") != std::string::npos, r.out.c_str());
    // A .pte whose weights live in a .ptd, exported without it: the written
    // .pte still needs that file, and the report says so (it said
    // "0 external tensors").
    r = runCli({"export", fixture("pte/linear.pte").toStdString(), "-o", (dir.path() + "/lin.pte").toStdString()});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.find("warning: 2 external tensors (") != std::string::npos, r.out.c_str());
    QVERIFY(r.out.find("the .pte still needs the .ptd") != std::string::npos);
  }

  // The installed binary behaves like the in-process command.
  void binaryExitCodes() {
    LSTUDIO_REQUIRE_FIXTURES();
    QProcess p;
    p.start(LSTUDIO_CLI, {"inspect", fixture("pte/add.pte")});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 0);
    QVERIFY(p.readAllStandardOutput().contains("aten::add.out"));
    p.start(LSTUDIO_CLI, {"inspect", fixture("pt2/aoti_package_preprocess.pt2")});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 3);
    QVERIFY(p.readAllStandardError().contains("aoti_package_preprocess.pt2"));
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
