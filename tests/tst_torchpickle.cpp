// torch.save pickle decoding: state dicts, sample inputs, parameters, shared
// storages and memo sharing, protocol 4, scalars, and hostile or broken input.
#include <QtTest>

#include <string>
#include <vector>

#include "engine/formats/TorchPickle.h"

using namespace lstudio;

namespace {

std::vector<uint8_t> fromHex(const char* hex) {
  QByteArray b = QByteArray::fromHex(hex);
  return std::vector<uint8_t>(b.begin(), b.end());
}

Result<PickledObjects> decode(const std::vector<uint8_t>& b) { return decodeTorchPickle(b.data(), b.size(), "data.pkl"); }
Result<PickledObjects> decode(const std::string& b) {
  return decodeTorchPickle(reinterpret_cast<const uint8_t*>(b.data()), b.size(), "data.pkl");
}

/// Hand assembly: raw opcodes and operands, BINUNICODE strings, GLOBAL lines.
struct Asm {
  std::string b;
  Asm& op(std::initializer_list<int> bytes) {
    for (int x : bytes) b += static_cast<char>(x);
    return *this;
  }
  Asm& str(const std::string& s) {  // BINUNICODE
    op({'X', int(s.size()), 0, 0, 0});
    b += s;
    return *this;
  }
  Asm& global(const std::string& module, const std::string& name) {
    b += "c" + module + "\n" + name + "\n";
    return *this;
  }
};

// The pickles below were made once by CPython 3.11's pickle module (protocol 2 unless
// noted, as torch.save writes) with stand-ins for torch's classes: storages named
// torch.FloatStorage / torch.LongStorage returned as persistent ids
// ('storage', <class>, key, 'cpu', numel) by a Pickler subclass, tensors reducing to
// torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict()).

// OrderedDict {'linear.weight': float 3x3 (storage '0', 9 elements), 'linear.bias': float [3]
// (storage '1', 3 elements)} with _metadata {'': {'version': 1}, 'linear': {'version': 1}}
// set as an attribute (a BUILD), like nn.Linear(3, 3).state_dict().
const char* kStateDict =
    "800263636f6c6c656374696f6e730a4f726465726564446963740a71002952710128580d0000006c696e6561722e776569676874"
    "710263746f7263682e5f7574696c730a5f72656275696c645f74656e736f725f76320a71032828580700000073746f7261676571"
    "0463746f7263680a466c6f617453746f726167650a71055801000000307106580300000063707571074b09747108514b004b034b"
    "038671094b034b0186710a8968002952710b74710c52710d580b0000006c696e6561722e62696173710e68032828680468055801"
    "00000031710f68074b03747110514b004b038571114b0185711289680029527113747114527115757d711658090000005f6d6574"
    "6164617461711768002952711828580000000071197d711a580700000076657273696f6e711b4b017358060000006c696e656172"
    "711c7d711d681b4b01737573622e";
constexpr size_t kStateDictWeightNumelAt = 146;  // the BININT1 operand 9 in the first persistent id
constexpr size_t kStateDictFirstReduceAt = 177;  // REDUCE of the first _rebuild_tensor_v2

// Sample inputs ((x,), {}) with x an int64 2x3 tensor on storage '0' (6 elements).
const char* kSampleInputs =
    "800263746f7263682e5f7574696c730a5f72656275696c645f74656e736f725f76320a71002828580700000073746f7261676571"
    "0163746f7263680a4c6f6e6753746f726167650a71025801000000307103580300000063707571044b06747105514b004b024b03"
    "8671064b034b018671078963636f6c6c656374696f6e730a4f726465726564446963740a71082952710974710a52710b85710c7d"
    "710d86710e2e";

// {'w': Parameter(float [4] on storage '0')}: torch._utils._rebuild_parameter(tensor, True, OrderedDict()).
const char* kParameter =
    "80027d7100580100000077710163746f7263682e5f7574696c730a5f72656275696c645f706172616d657465720a710263746f72"
    "63682e5f7574696c730a5f72656275696c645f74656e736f725f76320a71032828580700000073746f72616765710463746f7263"
    "680a466c6f617453746f726167650a71055801000000307106580300000063707571074b04747108514b004b048571094b018571"
    "0a8963636f6c6c656374696f6e730a4f726465726564446963740a710b2952710c74710d52710e88680b2952710f877110527111"
    "732e";

// [a, b]: two views of one 10-element float storage '0': a = 2x2 at offset 0, b = [6] at offset 4.
const char* kSharedStorage =
    "80025d71002863746f7263682e5f7574696c730a5f72656275696c645f74656e736f725f76320a71012828580700000073746f72"
    "616765710263746f7263680a466c6f617453746f726167650a71035801000000307104580300000063707571054b0a747106514b"
    "004b024b028671074b024b018671088963636f6c6c656374696f6e730a4f726465726564446963740a71092952710a74710b5271"
    "0c6801282868026803680468054b0a74710d514b044b0685710e4b0185710f89680929527110747111527112652e";

// {'a': t, 'b': [t, 2.5, None, True, "x'y", b'\x00b', -7, 2**70]} with t a 0-dim float tensor
// on storage '7': the second t is a BINGET of the first; the bytes go through _codecs.encode.
const char* kMemoSharing =
    "80027d710028580100000061710163746f7263682e5f7574696c730a5f72656275696c645f74656e736f725f76320a7102282858"
    "0700000073746f72616765710363746f7263680a466c6f617453746f726167650a71045801000000377105580300000063707571"
    "064b01747107514b0029298963636f6c6c656374696f6e730a4f726465726564446963740a71082952710974710a52710b580100"
    "000062710c5d710d28680b4740040000000000004e885803000000782779710e635f636f646563730a656e636f64650a710f5802"
    "0000000062711058060000006c6174696e3171118671125271134af9ffffff8a0900000000000000004065752e";

// Protocol 4: OrderedDict {'fc.weight': float 2x4 on storage '0' (8 elements), 'step': 3};
// FRAME, SHORT_BINUNICODE, STACK_GLOBAL and MEMOIZE throughout.
const char* kProtocol4 =
    "800495ab000000000000008c0b636f6c6c656374696f6e73948c0b4f72646572656444696374949394295294288c0966632e7765"
    "69676874948c0c746f7263682e5f7574696c73948c125f72656275696c645f74656e736f725f763294939428288c0773746f7261"
    "6765948c05746f726368948c0c466c6f617453746f726167659493948c0130948c03637075944b087494514b004b024b0486944b"
    "044b018694896802295294749452948c0473746570944b03752e";

// [1e16, 1e-05, 100.0, 0.1, -0.0, inf, 123456.789, 1.5e-07, 2**63, -2**63-1, -129, 'café\n', {1, 2}]
// (the set as protocol 2 writes it: __builtin__.set([1, 2])).
const char* kScalars =
    "80025d710028474341c37937e08000473ee4f8b588e368f1474059000000000000473fb999999999999a47800000000000000047"
    "7ff00000000000004740fe240c9fbe76c9473e8421f5f40d83768a090000000000000080008a09ffffffffffffff7fff4a7fffff"
    "ff5806000000636166c3a90a7101635f5f6275696c74696e5f5f0a7365740a71025d7103284b014b0265857104527105652e";

/// Hand-assembled _rebuild_tensor_v2(storage '0' of `numel` floats, 0, sizes, strides, False, {})
/// with `sizes` and `strides` given as the opcodes that push them; `storage` false pushes None instead.
std::string rebuildV2(const std::string& sizes, const std::string& strides, int numel = 16, bool storage = true) {
  Asm a;
  a.op({0x80, 2}).global("torch._utils", "_rebuild_tensor_v2").op({'('});
  if (storage) a.op({'('}).str("storage").global("torch", "FloatStorage").str("0").str("cpu").op({'K', numel, 't', 'Q'});
  else a.op({'N'});
  a.op({'K', 0}).b += sizes + strides;
  a.op({0x89, '}', 't', 'R', '.'});
  return a.b;
}

void checkTensor(const PickledTensor& t, const std::string& key, ScalarType dtype, uint64_t numel, int64_t offset,
                 std::vector<int64_t> sizes, std::vector<int64_t> strides, bool requiresGrad) {
  QCOMPARE(t.storageKey, key);
  QCOMPARE(t.dtype, dtype);
  QCOMPARE(t.storageNumel, numel);
  QCOMPARE(t.storageOffset, offset);
  QCOMPARE(t.sizes, sizes);
  QCOMPARE(t.strides, strides);
  QCOMPARE(t.requiresGrad, requiresGrad);
  QCOMPARE(t.location, std::string("cpu"));
}

}  // namespace

class TestTorchPickle : public QObject {
  Q_OBJECT
 private slots:
  void stateDict() {
    auto r = decode(fromHex(kStateDict));
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r->tensors.size(), size_t(2));
    QCOMPARE(r->tensors[0].first, std::string("linear.weight"));
    checkTensor(r->tensors[0].second, "0", ScalarType::Float, 9, 0, {3, 3}, {3, 1}, false);
    QCOMPARE(r->tensors[1].first, std::string("linear.bias"));
    checkTensor(r->tensors[1].second, "1", ScalarType::Float, 3, 0, {3}, {1}, false);
    QVERIFY(r->scalars.empty());  // _metadata is an attribute, not an item
  }

  void sampleInputs() {
    auto r = decode(fromHex(kSampleInputs));
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r->tensors.size(), size_t(1));
    QCOMPARE(r->tensors[0].first, std::string("0.0"));
    checkTensor(r->tensors[0].second, "0", ScalarType::Long, 6, 0, {2, 3}, {3, 1}, false);
    QVERIFY(r->scalars.empty());
  }

  void parameter() {
    auto r = decode(fromHex(kParameter));
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r->tensors.size(), size_t(1));
    QCOMPARE(r->tensors[0].first, std::string("w"));
    checkTensor(r->tensors[0].second, "0", ScalarType::Float, 4, 0, {4}, {1}, true);
  }

  void sharedStorage() {
    auto r = decode(fromHex(kSharedStorage));
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r->tensors.size(), size_t(2));
    QCOMPARE(r->tensors[0].first, std::string("0"));
    checkTensor(r->tensors[0].second, "0", ScalarType::Float, 10, 0, {2, 2}, {2, 1}, false);
    QCOMPARE(r->tensors[1].first, std::string("1"));
    checkTensor(r->tensors[1].second, "0", ScalarType::Float, 10, 4, {6}, {1}, false);
  }

  void memoSharing() {
    auto r = decode(fromHex(kMemoSharing));
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r->tensors.size(), size_t(2));
    QCOMPARE(r->tensors[0].first, std::string("a"));
    QCOMPARE(r->tensors[1].first, std::string("b.0"));
    for (const auto& [path, t] : r->tensors) checkTensor(t, "7", ScalarType::Float, 1, 0, {}, {}, false);
    std::vector<std::pair<std::string, std::string>> want = {
        {"b.1", "2.5"}, {"b.2", "None"}, {"b.3", "True"}, {"b.4", "\"x'y\""}, {"b.5", "b'\\x00b'"},
        {"b.6", "-7"}, {"b.7", "1180591620717411303424"}};
    QCOMPARE(r->scalars.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      QCOMPARE(r->scalars[i].first, want[i].first);
      QCOMPARE(r->scalars[i].second.text, want[i].second);
    }
  }

  void protocol4() {
    auto r = decode(fromHex(kProtocol4));
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r->tensors.size(), size_t(1));
    QCOMPARE(r->tensors[0].first, std::string("fc.weight"));
    checkTensor(r->tensors[0].second, "0", ScalarType::Float, 8, 0, {2, 4}, {4, 1}, false);
    QCOMPARE(r->scalars.size(), size_t(1));
    QCOMPARE(r->scalars[0].first, std::string("step"));
    QCOMPARE(r->scalars[0].second.text, std::string("3"));
    // MEMOIZE numbers entries 0, 1, ...: ['a', 'b'] from two memoized strings.
    r = decode(std::string("\x80\x04\x8c\x01" "a\x94\x8c\x01" "b\x94](h\x00h\x01" "e.", 18));
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r->scalars.size(), size_t(2));
    QCOMPARE(r->scalars[0].second.text, std::string("'a'"));
    QCOMPARE(r->scalars[1].second.text, std::string("'b'"));
    // Memo indices may skip some; one beyond the file's size is refused before allocating.
    r = decode(std::string("\x80\x02K\x09q\x07" "0h\x07.", 10));
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r->scalars.size(), size_t(1));
    QCOMPARE(r->scalars[0].second.text, std::string("9"));
    r = decode(std::string("\x80\x02K\x09r\xff\xff\xff\xff" "0j\xff\xff\xff\xff.", 16));
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::Unsupported);
    QCOMPARE(r.error().offset, std::optional<uint64_t>(4));
  }

  void scalarsReadAsPythonPrintsThem() {
    auto r = decode(fromHex(kScalars));
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QVERIFY(r->tensors.empty());
    std::vector<std::string> want = {"1e+16", "1e-05", "100.0", "0.1", "-0.0", "inf", "123456.789", "1.5e-07",
                                     "9223372036854775808", "-9223372036854775809", "-129", "'caf\xc3\xa9\\n'", "1", "2"};
    QCOMPARE(r->scalars.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      QCOMPARE(r->scalars[i].first, i < 12 ? std::to_string(i) : "12." + std::to_string(i - 12));
      QCOMPARE(r->scalars[i].second.text, want[i]);
    }
  }

  // Hand-assembled: what torch writes for the dtypes the legacy storage classes lack.
  void rebuildTensorV3ViewsUntypedStorage() {
    Asm a;
    a.op({0x80, 2}).global("torch._utils", "_rebuild_tensor_v3").op({'('});
    a.op({'('}).str("storage").global("torch.storage", "UntypedStorage").str("3").str("cpu").op({'K', 12, 't'});
    a.op({'Q'});                                 // BINPERSID: 12 bytes = 6 uint16 elements
    a.op({'K', 2});                              // storage offset 2
    a.op({'K', 2, 'K', 2, 0x86});                // sizes (2, 2)
    a.op({'K', 1, 'K', 2, 0x86});                // strides (1, 2): a transposed view
    a.op({0x88, '}'}).global("torch", "uint16");  // requires_grad, hooks, dtype
    a.op({'t', 'R', '.'});
    auto r = decode(a.b);
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r->tensors.size(), size_t(1));
    QCOMPARE(r->tensors[0].first, std::string(""));  // a bare tensor has the empty path
    checkTensor(r->tensors[0].second, "3", ScalarType::UInt16, 6, 2, {2, 2}, {1, 2}, true);
  }

  // Hand-assembled: a repeated key keeps its first place and takes the last value; a
  // list that contains itself is flattened once; other persistent ids are opaque.
  void duplicateKeysCyclesAndOpaqueObjects() {
    Asm a;
    a.op({0x80, 2, '}', 'q', 0});
    a.str("k").op({'K', 5, 's'});                      // d['k'] = 5
    a.str("c").op({']', 'q', 1, 'K', 1, 'a'});         // L = [1]
    a.op({'h', 1, 'a', 's'});                          // L.append(L); d['c'] = L
    a.str("p").op({'P'}).b += "some id\n";             // PERSID of something not a storage
    a.op({'s'});
    a.str("m").global("torch", "device").str("cpu").op({0x85, 'R', 's'});  // torch.device('cpu')
    a.str("l").global("__main__", "MyList").op({')', 0x81, '(', 'K', 3, 'e', 's'});  // a list subclass
    a.str("k").op({'K', 7, 's'});                      // d['k'] = 7
    a.op({'(', '0'});                                  // POP of nothing above a MARK drops the MARK
    a.op({'h', 0, '}', 'b', '.'});                     // BUILD: attributes, ignored
    auto r = decode(a.b);
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QVERIFY(r->tensors.empty());
    QCOMPARE(r->scalars.size(), size_t(2));
    QCOMPARE(r->scalars[0].first, std::string("k"));
    QCOMPARE(r->scalars[0].second.text, std::string("7"));
    QCOMPARE(r->scalars[1].first, std::string("c.0"));
    QCOMPARE(r->scalars[1].second.text, std::string("1"));
  }

  void everyTruncationFails() {
    for (const char* hex : {kStateDict, kProtocol4, kMemoSharing}) {
      std::vector<uint8_t> full = fromHex(hex);
      for (size_t n = 0; n < full.size(); ++n) {
        std::vector<uint8_t> cut(full.begin(), full.begin() + n);  // exact size: ASan sees any overread
        auto r = decode(cut);
        QVERIFY2(!r.ok(), qPrintable(QString("prefix of %1 bytes decoded").arg(n)));
        QVERIFY(r.error().offset.has_value());
        QVERIFY(*r.error().offset <= n);
        QCOMPARE(r.error().file, std::string("data.pkl"));
      }
    }
    auto empty = decodeTorchPickle(nullptr, 0, "data.pkl");
    QVERIFY(!empty.ok());
    QCOMPARE(empty.error().code, ErrorCode::Truncated);
  }

  void hugeLengthsFailWithoutAllocating() {
    // BINUNICODE announcing 4 GiB, BINUNICODE8 and BINBYTES8 announcing 2^62, FRAME 2^63.
    for (std::string head : {std::string("X\xff\xff\xff\xff", 5), std::string("\x8d\0\0\0\0\0\0\0\x40", 9),
                             std::string("\x8e\0\0\0\0\0\0\0\x40", 9), std::string("\x95\0\0\0\0\0\0\0\x80", 9)}) {
      auto r = decode(std::string("\x80\x04", 2) + head + "abc.");
      QVERIFY(!r.ok());
      QCOMPARE(r.error().code, ErrorCode::Truncated);
      QCOMPARE(r.error().offset, std::optional<uint64_t>(2));
    }
    // LONG4: integers up to 128 bits, however many redundant sign bytes they carry.
    auto r = decode(std::string("\x80\x02\x8b\x00\x00\x01\x00", 7) + std::string(65536, '\x01') + ".");
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::Unsupported);
    QCOMPARE(r.error().found, std::string("524288 bits"));
    r = decode(std::string("\x80\x02\x8b\x00\x00\x01\x00\xfe", 8) + std::string(65535, '\xff') + ".");
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r->scalars[0].second.text, std::string("-2"));
    r = decode(std::string("\x80\x02\x8a\x10", 4) + std::string(15, '\xff') + "\x7f.");  // 2^127 - 1
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r->scalars[0].second.text, std::string("170141183460469231731687303715884105727"));
    r = decode(std::string("\x80\x02\x8a\x11", 4) + std::string(16, '\0') + "\x01.");  // 2^128
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::Unsupported);
  }

  void stackUnderflowFails() {
    auto r = decode(std::string("\x80\x02R.", 4));
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::Invalid);
    QCOMPARE(r.error().offset, std::optional<uint64_t>(2));
    QCOMPARE(r.error().expected, std::string("2 values on the stack"));
    QCOMPARE(r.error().found, std::string("0"));
    // TUPLE2 sees only what lies above the MARK.
    r = decode(std::string("\x80\x02N(N\x86.", 7));
    QVERIFY(!r.ok());
    QCOMPARE(r.error().offset, std::optional<uint64_t>(5));
    QCOMPARE(r.error().found, std::string("1"));
    // APPENDS with nothing below its MARK; SETITEMS with a key and no value; no MARK at all.
    for (const char* bad : {"\x80\x02(Ne.", "\x80\x02}(Nu.", "\x80\x02]Ne.", "\x80\x02."}) {
      r = decode(std::string(bad));
      QVERIFY2(!r.ok(), bad);
      QCOMPARE(r.error().code, ErrorCode::Invalid);
    }
  }

  void wrongTypesAndMissingMemoFail() {
    auto r = decode(std::string("\x80\x02N}R.", 6));  // REDUCE with a dict for arguments
    QVERIFY(!r.ok());
    QCOMPARE(r.error().offset, std::optional<uint64_t>(4));
    QCOMPARE(r.error().message(), std::string("data.pkl: at byte 4 (0x4): pickle opcode 0x52 REDUCE: expected a tuple "
                                              "on the stack, found a dict"));
    r = decode(std::string("\x80\x02h\x05.", 5));  // BINGET of an index never stored
    QVERIFY(!r.ok());
    QCOMPARE(r.error().found, std::string("index 5, never stored"));
    // A view that ends past its storage: the state dict with the weight's storage cut to 8 elements.
    std::vector<uint8_t> b = fromHex(kStateDict);
    QCOMPARE(b[kStateDictWeightNumelAt], uint8_t(9));
    b[kStateDictWeightNumelAt] = 8;
    r = decode(b);
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::OutOfRange);
    QCOMPARE(r.error().offset, std::optional<uint64_t>(kStateDictFirstReduceAt));
    QCOMPARE(r.error().found, std::string("an element at index 8"));
  }

  void badTensorArgumentsFail() {
    auto r = decode(rebuildV2("K\x04K\x04\x86", "K\x04K\x01\x86"));  // 4x4 over 16 elements: fine
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    checkTensor(r->tensors[0].second, "0", ScalarType::Float, 16, 0, {4, 4}, {4, 1}, false);
    r = decode(rebuildV2("K\x04K\x04\x86", "K\x04K\x01\x86", 15));  // one element short
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::OutOfRange);
    QCOMPARE(r.error().found, std::string("an element at index 15"));
    r = decode(rebuildV2(std::string("K\x00K\x04\x86", 5), "K\x04K\x01\x86", 0));  // empty: touches nothing
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    r = decode(rebuildV2("K\x04K\x04\x86", "K\x04K\x01\x86", 16, false));
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::Invalid);
    QCOMPARE(r.error().found, std::string("None"));
    r = decode(rebuildV2("K\x04K\x04\x86", "K\x01\x85"));
    QVERIFY(!r.ok());
    QCOMPARE(r.error().expected, std::string("as many strides as sizes"));
    r = decode(rebuildV2("J\xff\xff\xff\xff\x85", "K\x01\x85"));  // size -1
    QVERIFY(!r.ok());
    QCOMPARE(r.error().found, std::string("-1 (an int)"));
    std::string huge("\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40", 10);  // 2^62
    r = decode(rebuildV2(huge + huge + "\x86", "K\x08K\x01\x86"));
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::Overflow);
  }

  void unknownOpcodesFail() {
    auto r = decode(std::string("\x80\x02N\xff.", 5));
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::Invalid);
    QCOMPARE(r.error().offset, std::optional<uint64_t>(3));
    QVERIFY(r.error().message().find("0xff") != std::string::npos);
    r = decode(std::string("\x80\x02I1\n.", 6));  // protocol 0 INT: an opcode, but not one torch.save writes
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::Unsupported);
    QCOMPARE(r.error().what, std::string("pickle opcode 0x49 INT"));
    r = decode(std::string("\x80\x06N.", 4));
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::Unsupported);
  }

  void deepOrWideStructuresFail() {
    // 200 nested 1-tuples: fine for the machine, refused when flattened.
    auto r = decode("\x80\x02N" + std::string(200, '\x85') + ".");
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::Unsupported);
    QVERIFY(r.error().message().find("nest") != std::string::npos);
    // 100 nested 1-tuples are fine.
    r = decode("\x80\x02N" + std::string(100, '\x85') + ".");
    QVERIFY(r.ok());
    QCOMPARE(r->scalars.size(), size_t(1));
    QCOMPARE(r->scalars[0].first.size(), size_t(199));  // "0.0. ... .0"
    // Nested MARKs.
    r = decode(std::string(5000, '(') + "N.");
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::Unsupported);
    // A deep stack.
    r = decode(std::string((1 << 20) + 1, 'N') + ".");
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::Unsupported);
    // 48 levels of x = (x, x) is 2^48 paths from 100 bytes: the work budget stops it.
    std::string dag = "\x80\x02N";
    for (int i = 0; i < 48; ++i) dag += "2\x86";
    r = decode(dag + ".");
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::Unsupported);
  }
};

QTEST_GUILESS_MAIN(TestTorchPickle)
#include "tst_torchpickle.moc"
