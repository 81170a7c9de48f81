// A bounded pickle virtual machine (protocols 2-5) that knows torch.save's
// conventions: storages as persistent ids, tensor rebuild calls, OrderedDicts.
#include "engine/formats/TorchPickle.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace lstudio {
namespace {

// Limits that make a hostile file fail fast; torch.save's pickles stay far below them.
constexpr size_t kMaxStack = size_t{1} << 20;  // values on the stack
constexpr size_t kMaxMarks = 1024;             // MARKs open at once
constexpr int kMaxDepth = 128;                 // nested containers above a leaf
constexpr size_t kMaxScalarText = 256;         // string bytes quoted in a scalar's text
// Memory and flattening work may reach this many bytes per byte of pickle (plus a floor).
constexpr uint64_t kBudgetPerByte = 64, kBudgetFloor = uint64_t{1} << 20;

enum class Kind : uint8_t {
  None, Bool, Int, BigInt, Float, Str, Bytes,  // scalars: reported as text
  Tuple, List, Set, Dict,                      // containers: flattened
  Global, Storage, Tensor, Opaque,
};
bool isScalar(Kind k) { return k <= Kind::Bytes; }
bool isContainer(Kind k) { return k >= Kind::Tuple && k <= Kind::Dict; }

/// A Python value. Objects live in the machine's arena and point at each other,
/// so memo sharing is plain aliasing and cycles cost nothing to free.
struct Obj {
  Kind kind = Kind::None;
  bool visiting = false;    // on the path being flattened (cycle guard)
  uint64_t at = 0;          // offset of the opcode that made it
  int64_t i = 0;            // Bool, Int
  double f = 0;             // Float
  std::string s;            // Str, Bytes, BigInt (its text), Global ("module.name")
  std::vector<Obj*> items;  // Tuple, List, Set; Dict: key, value, key, value, ...
  std::unique_ptr<std::unordered_map<std::string_view, size_t>> strKeys;  // Dict: index of each str key
  std::unique_ptr<PickledTensor> tensor;  // Storage (no view yet), Tensor
};

const char* kindName(Kind k) {
  switch (k) {
    case Kind::None: return "None";
    case Kind::Bool: return "a bool";
    case Kind::Int: case Kind::BigInt: return "an int";
    case Kind::Float: return "a float";
    case Kind::Str: return "a str";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return "a tuple";
    case Kind::List: return "a list";
    case Kind::Set: return "a set";
    case Kind::Dict: return "a dict";
    case Kind::Global: return "a global";
    case Kind::Storage: return "a storage";
    case Kind::Tensor: return "a tensor";
    case Kind::Opaque: return "an object";
  }
  return "?";
}
std::string describe(const Obj* o) { return o->kind == Kind::Global ? "the global " + o->s : kindName(o->kind); }
bool isBoolish(const Obj* o) { return o->kind == Kind::Bool || o->kind == Kind::Int; }

const char* opName(uint8_t code) {
  static constexpr std::pair<uint8_t, const char*> kNames[] = {
      {'(', "MARK"}, {')', "EMPTY_TUPLE"}, {'.', "STOP"}, {'0', "POP"}, {'1', "POP_MARK"}, {'2', "DUP"},
      {'B', "BINBYTES"}, {'C', "SHORT_BINBYTES"}, {'F', "FLOAT"}, {'G', "BINFLOAT"}, {'I', "INT"},
      {'J', "BININT"}, {'K', "BININT1"}, {'L', "LONG"}, {'M', "BININT2"}, {'N', "NONE"}, {'P', "PERSID"},
      {'Q', "BINPERSID"}, {'R', "REDUCE"}, {'S', "STRING"}, {'T', "BINSTRING"}, {'U', "SHORT_BINSTRING"},
      {'V', "UNICODE"}, {'X', "BINUNICODE"}, {']', "EMPTY_LIST"}, {'a', "APPEND"}, {'b', "BUILD"},
      {'c', "GLOBAL"}, {'d', "DICT"}, {'e', "APPENDS"}, {'g', "GET"}, {'h', "BINGET"}, {'i', "INST"},
      {'j', "LONG_BINGET"}, {'l', "LIST"}, {'o', "OBJ"}, {'p', "PUT"}, {'q', "BINPUT"}, {'r', "LONG_BINPUT"},
      {'s', "SETITEM"}, {'t', "TUPLE"}, {'u', "SETITEMS"}, {'}', "EMPTY_DICT"}, {0x80, "PROTO"},
      {0x81, "NEWOBJ"}, {0x82, "EXT1"}, {0x83, "EXT2"}, {0x84, "EXT4"}, {0x85, "TUPLE1"}, {0x86, "TUPLE2"},
      {0x87, "TUPLE3"}, {0x88, "NEWTRUE"}, {0x89, "NEWFALSE"}, {0x8a, "LONG1"}, {0x8b, "LONG4"},
      {0x8c, "SHORT_BINUNICODE"}, {0x8d, "BINUNICODE8"}, {0x8e, "BINBYTES8"}, {0x8f, "EMPTY_SET"},
      {0x90, "ADDITEMS"}, {0x91, "FROZENSET"}, {0x92, "NEWOBJ_EX"}, {0x93, "STACK_GLOBAL"}, {0x94, "MEMOIZE"},
      {0x95, "FRAME"}, {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"},
  };
  for (const auto& [c, name] : kNames)
    if (c == code) return name;
  return nullptr;
}

/// Element type of a storage class torch.save names in a persistent id.
std::optional<ScalarType> storageDtype(std::string_view global) {
  using S = ScalarType;
  static constexpr std::pair<std::string_view, ScalarType> kClasses[] = {
      {"FloatStorage", S::Float}, {"DoubleStorage", S::Double}, {"HalfStorage", S::Half},
      {"BFloat16Storage", S::BFloat16}, {"LongStorage", S::Long}, {"IntStorage", S::Int},
      {"ShortStorage", S::Short}, {"CharStorage", S::Char}, {"ByteStorage", S::Byte}, {"BoolStorage", S::Bool},
      {"ComplexFloatStorage", S::ComplexFloat}, {"ComplexDoubleStorage", S::ComplexDouble},
      {"QInt8Storage", S::QInt8}, {"QUInt8Storage", S::QUInt8}, {"QInt32Storage", S::QInt32},
      {"QUInt4x2Storage", S::QUInt4x2}, {"QUInt2x4Storage", S::QUInt2x4},
      {"UntypedStorage", S::Byte},  // its numel counts bytes
  };
  // torch.FloatStorage; torch.storage.UntypedStorage; torch.cuda.* in old files.
  for (std::string_view prefix : {"torch.storage.", "torch.cuda.", "torch."})
    if (global.starts_with(prefix)) {
      global.remove_prefix(prefix.size());
      for (const auto& [name, t] : kClasses)
        if (name == global) return t;
      break;
    }
  return std::nullopt;
}

/// Python's repr of a float: shortest round-trip digits, fixed notation for 1e-4 <= |v| < 1e16.
std::string floatText(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[48];
  char* end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific).ptr;
  std::string_view sci(buf, end - buf);
  size_t e = sci.find('e');
  int exp = 0;
  std::from_chars(sci.data() + e + (sci[e + 1] == '+' ? 2 : 1), end, exp);
  std::string digits, out = v < 0 || sci[0] == '-' ? "-" : "";
  for (char c : sci.substr(0, e))
    if (c >= '0' && c <= '9') digits += c;
  if (exp < -4 || exp >= 16) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out + eb;
  }
  if (exp < 0) return out + "0." + std::string(-exp - 1, '0') + digits;
  if (digits.size() <= static_cast<size_t>(exp) + 1) return out + digits + std::string(exp + 1 - digits.size(), '0') + ".0";
  return out + digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
}

/// Python's repr of a str or bytes, cut after kMaxScalarText bytes ("..." follows).
std::string reprText(std::string_view s, bool bytes) {
  char q = s.find('\'') != s.npos && s.find('"') == s.npos ? '"' : '\'';
  size_t n = std::min(s.size(), kMaxScalarText);
  while (!bytes && n < s.size() && n > 0 && (static_cast<uint8_t>(s[n]) & 0xC0) == 0x80) --n;  // whole UTF-8 only
  std::string out = bytes ? "b" : "";
  out += q;
  for (size_t k = 0; k < n; ++k) {
    auto c = static_cast<uint8_t>(s[k]);
    if (c == '\\' || c == q) out += {'\\', static_cast<char>(c)};
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f || (bytes && c >= 0x80)) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else out += static_cast<char>(c);
  }
  out += q;
  return n < s.size() ? out + "..." : out;
}

std::string scalarText(const Obj* o) {
  switch (o->kind) {
    case Kind::None: return "None";
    case Kind::Bool: return o->i ? "True" : "False";
    case Kind::Int: return std::to_string(o->i);
    case Kind::BigInt: return o->s;
    case Kind::Float: return floatText(o->f);
    case Kind::Str: return reprText(o->s, false);
    case Kind::Bytes: return reprText(o->s, true);
    default: return "";
  }
}

/// A value for an error message: "-1 (an int)", "a dict".
std::string shown(const Obj* o) {
  return isScalar(o->kind) && o->kind != Kind::None ? scalarText(o) + " (" + kindName(o->kind) + ")" : describe(o);
}

/// Decimal text of a little-endian two's-complement integer of 9 to 16 bytes.
std::string bigIntText(const uint8_t* p, size_t n) {
  bool neg = p[n - 1] & 0x80;
  unsigned __int128 u = 0;
  for (size_t k = 16; k-- > 0;) u = u << 8 | (k < n ? p[k] : neg ? 0xff : 0);
  if (neg) u = ~u + 1;
  std::string d;
  do d.insert(d.begin(), static_cast<char>('0' + static_cast<int>(u % 10))); while (u /= 10);
  return neg ? "-" + d : d;
}

/// Latin-1 bytes of UTF-8 text (how protocol 2 pickles bytes); nullopt above U+00FF.
std::optional<std::string> latin1(std::string_view u) {
  std::string out;
  for (size_t k = 0; k < u.size(); ++k) {
    auto c = static_cast<uint8_t>(u[k]);
    if (c < 0x80) out += static_cast<char>(c);
    else if ((c == 0xC2 || c == 0xC3) && k + 1 < u.size() && (static_cast<uint8_t>(u[k + 1]) & 0xC0) == 0x80)
      out += static_cast<char>(((c & 0x03) << 6) | (static_cast<uint8_t>(u[++k]) & 0x3F));
    else return std::nullopt;
  }
  return out;
}

class Machine {
 public:
  Machine(const uint8_t* data, size_t size, const std::string& file)
      : d_(data), n_(size), file_(file), budget_(kBudgetPerByte * size + kBudgetFloor) {
    none_ = make(Kind::None);
    false_ = make(Kind::Bool);
    true_ = make(Kind::Bool);
    true_->i = 1;
    emptyTuple_ = make(Kind::Tuple);  // immutable, so one object serves every EMPTY_TUPLE
  }

  Result<PickledObjects> decode() {
    Obj* root = nullptr;
    while (!root) {
      if (!step(root)) return *err_;
      if (charged_ > budget_) return overBudget(op_);
    }
    PickledObjects out;
    std::string path;
    if (!flatten(root, path, 0, out)) return *err_;
    return out;
  }

 private:
  const uint8_t* d_;
  size_t n_;
  const std::string& file_;
  size_t pos_ = 0;    // next byte to read
  size_t op_ = 0;     // offset of the opcode being run
  uint8_t code_ = 0;  // the opcode being run
  std::deque<Obj> arena_;  // a deque never moves its elements
  std::vector<Obj*> stack_;
  std::vector<size_t> marks_;  // stack sizes at each open MARK
  std::vector<Obj*> memo_;  // by index; null: never stored
  size_t memoCount_ = 0;    // entries stored: MEMOIZE's next index (len(memo) in Python)
  Obj* smallInts_[256] = {};
  Obj *none_, *false_, *true_, *emptyTuple_;
  uint64_t budget_, charged_ = 0;  // bytes of objects made and of output produced
  std::optional<Error> err_;

  bool failAt(ErrorCode c, uint64_t at, std::string what, std::string expected, std::string found) {
    err_ = Error{c, file_, at, std::move(what), std::move(expected), std::move(found)};
    return false;
  }
  bool fail(ErrorCode c, std::string expected, std::string found) {
    char what[48];
    const char* name = opName(code_);
    std::snprintf(what, sizeof what, "pickle opcode 0x%02x%s%s", code_, name ? " " : "", name ? name : "");
    return failAt(c, op_, what, std::move(expected), std::move(found));
  }
  Error overBudget(uint64_t at) {
    failAt(ErrorCode::Unsupported, at, "pickle size limit",
           "at most " + std::to_string(budget_) + " bytes of objects and paths for a " + std::to_string(n_) + "-byte pickle",
           "more (a pathological or hostile file)");
    return *err_;
  }

  Obj* make(Kind k) {
    Obj& o = arena_.emplace_back();
    o.kind = k;
    o.at = op_;
    charged_ += sizeof(Obj);
    return &o;
  }
  Obj* makeInt(int64_t v) {
    if (v >= 0 && v < 256 && smallInts_[v]) return smallInts_[v];  // ints are values: sharing is safe
    Obj* o = make(Kind::Int);
    o->i = v;
    if (v >= 0 && v < 256) smallInts_[v] = o;
    return o;
  }

  // --- reading the byte stream ---
  bool take(uint64_t k, const uint8_t*& p) {
    if (k > n_ - pos_)
      return fail(ErrorCode::Truncated, std::to_string(k) + " more bytes", std::to_string(n_ - pos_) + " bytes left");
    p = d_ + pos_;
    pos_ += k;
    return true;
  }
  bool readUint(int width, uint64_t& v) {
    const uint8_t* p;
    if (!take(width, p)) return false;
    v = 0;
    for (int k = width; k-- > 0;) v = v << 8 | p[k];
    return true;
  }
  bool readLine(std::string& out) {
    const void* nl = std::memchr(d_ + pos_, '\n', n_ - pos_);
    if (!nl) return fail(ErrorCode::Truncated, "a line ending in '\\n'", "the end of the data");
    size_t len = static_cast<const uint8_t*>(nl) - (d_ + pos_);
    out.assign(reinterpret_cast<const char*>(d_ + pos_), len);
    pos_ += len + 1;
    return true;
  }

  // --- the stack; opcodes other than the MARK ones see only what lies above the last MARK ---
  size_t base() const { return marks_.empty() ? 0 : marks_.back(); }
  bool need(size_t k) {
    if (stack_.size() - base() >= k) return true;
    return fail(ErrorCode::Invalid,
                std::to_string(k) + (k == 1 ? " value" : " values") + (marks_.empty() ? " on the stack" : " on the stack above the last MARK"),
                std::to_string(stack_.size() - base()));
  }
  bool push(Obj* o) {
    if (stack_.size() >= kMaxStack)
      return fail(ErrorCode::Unsupported, "at most " + std::to_string(kMaxStack) + " values on the stack", "more");
    stack_.push_back(o);
    return true;
  }
  /// Closes the last MARK; its items are stack_[m..], with at least `below` values under them.
  bool popMark(size_t& m, size_t below = 0) {
    if (marks_.empty()) return fail(ErrorCode::Invalid, "a MARK before this opcode", "no open MARK");
    m = marks_.back();
    marks_.pop_back();
    if (m - base() < below) return fail(ErrorCode::Invalid, "a value below the MARK", "none");
    return true;
  }
  /// A new container holding stack_[m..], which it takes off the stack.
  Obj* collect(Kind k, size_t m) {
    Obj* o = make(k);
    o->items.assign(stack_.begin() + m, stack_.end());
    charged_ += 8 * o->items.size();
    stack_.resize(m);
    return o;
  }
  bool replaceTop(size_t popped, Obj* o) {
    stack_.resize(stack_.size() - popped);
    stack_.back() = o;
    return true;
  }

  void setItem(Obj* dict, Obj* key, Obj* value) {
    if (key->kind == Kind::Str) {  // a repeated str key replaces the value in place, as in Python
      if (!dict->strKeys) dict->strKeys = std::make_unique<std::unordered_map<std::string_view, size_t>>();
      auto [it, fresh] = dict->strKeys->try_emplace(key->s, dict->items.size());
      charged_ += 48;
      if (!fresh) {
        dict->items[it->second + 1] = value;
        return;
      }
    }
    dict->items.push_back(key);
    dict->items.push_back(value);
    charged_ += 16;
  }
  /// APPEND(S), SETITEM(S), ADDITEMS: `items` go into `target`, which must be a `want`.
  bool addItems(Obj* target, Obj* const* items, size_t count, Kind want) {
    if (target->kind == Kind::Opaque) return true;  // e.g. a list subclass: its contents are not modelled
    if (target->kind != want) return fail(ErrorCode::Invalid, std::string(kindName(want)) + " to add to", describe(target));
    if (want == Kind::Dict) {
      if (count % 2) return fail(ErrorCode::Invalid, "key-value pairs after the MARK", std::to_string(count) + " values");
      for (size_t k = 0; k < count; k += 2) setItem(target, items[k], items[k + 1]);
    } else {
      target->items.insert(target->items.end(), items, items + count);
      charged_ += 8 * count;
    }
    return true;
  }
  bool memoize(uint64_t index) {
    if (!need(1)) return false;
    if (index >= n_)  // picklers number entries 0, 1, 2, ...: each costs at least a byte
      return fail(ErrorCode::Unsupported, "a memo index below the pickle's size " + std::to_string(n_), std::to_string(index));
    if (index >= memo_.size()) {
      charged_ += 8 * (index + 1 - memo_.size());
      memo_.resize(index + 1);
    }
    memoCount_ += !memo_[index];
    memo_[index] = stack_.back();
    return true;
  }
  bool pushString(Kind k, int width, bool isSigned = false) {
    uint64_t len;
    const uint8_t* p;
    if (!readUint(width, len)) return false;
    if (isSigned && (len & 0x80000000u))
      return fail(ErrorCode::Invalid, "a length >= 0", std::to_string(static_cast<int32_t>(len)));
    if (!take(len, p)) return false;  // before allocating: the bytes must be there
    Obj* o = make(k);
    o->s.assign(reinterpret_cast<const char*>(p), len);
    charged_ += len;
    return push(o);
  }
  bool pushLong(int width) {
    uint64_t n;
    const uint8_t* p;
    if (!readUint(width, n)) return false;
    if (width == 4 && (n & 0x80000000u))
      return fail(ErrorCode::Invalid, "a byte count >= 0", std::to_string(static_cast<int32_t>(n)));
    if (!take(n, p)) return false;
    size_t m = n;  // drop redundant sign bytes
    while (m > 1 && p[m - 1] == ((p[m - 2] & 0x80) ? 0xff : 0x00)) --m;
    if (m > 16) return fail(ErrorCode::Unsupported, "an integer of at most 128 bits", std::to_string(8 * m) + " bits");
    if (m > 8) {
      Obj* o = make(Kind::BigInt);
      o->s = bigIntText(p, m);
      return push(o);
    }
    uint64_t u = m && (p[m - 1] & 0x80) ? ~uint64_t{0} : 0;
    for (size_t k = 0; k < m; ++k) u = (u & ~(uint64_t{0xff} << (8 * k))) | uint64_t{p[k]} << (8 * k);
    return push(makeInt(static_cast<int64_t>(u)));
  }
  bool pushGlobal(const std::string& module, const std::string& name) {
    Obj* o = make(Kind::Global);
    o->s = module + "." + name;
    charged_ += o->s.size();
    return push(o);
  }

  bool step(Obj*& result);
  bool readProtocol();
  bool skipFrame();
  bool pushMark();
  bool pop();
  bool pushBinFloat();
  bool pushDict();
  bool addMarkedItems();
  bool memoGet();
  bool stackGlobal();
  bool reduce();
  bool newObject();
  bool unknownOpcode();
  bool persistentLoad(Obj* pid);
  bool call(Obj* fn, Obj* args, Obj*& out, int depth);
  bool rebuildTensor(int version, std::string_view fn, const std::vector<Obj*>& a, Obj*& out);
  bool flatten(Obj* o, std::string& path, int depth, PickledObjects& out);
};

bool Machine::step(Obj*& result) {
  op_ = pos_;
  if (pos_ >= n_) return failAt(ErrorCode::Truncated, op_, "pickle", "a STOP opcode", "the end of the data");
  code_ = d_[pos_++];
  uint64_t v = 0;
  size_t m = 0;
  switch (code_) {
    case 0x80: return readProtocol();  // PROTO
    case 0x95: return skipFrame();     // FRAME
    case '.':  // STOP
      if (!need(1)) return false;
      result = stack_.back();
      return true;
    case '(': return pushMark();  // MARK
    case '0': return pop();       // POP
    case '1':  // POP_MARK
      if (!popMark(m)) return false;
      stack_.resize(m);
      return true;
    case '2': return need(1) && push(stack_.back());  // DUP
    case 'N': return push(none_);
    case 0x88: return push(true_);
    case 0x89: return push(false_);
    case 'J': return readUint(4, v) && push(makeInt(static_cast<int32_t>(v)));  // BININT
    case 'K': return readUint(1, v) && push(makeInt(static_cast<int64_t>(v)));  // BININT1
    case 'M': return readUint(2, v) && push(makeInt(static_cast<int64_t>(v)));  // BININT2
    case 0x8a: return pushLong(1);
    case 0x8b: return pushLong(4);
    case 'G': return pushBinFloat();  // BINFLOAT
    case 0x8c: return pushString(Kind::Str, 1);  // SHORT_BINUNICODE
    case 'X': return pushString(Kind::Str, 4);   // BINUNICODE
    case 0x8d: return pushString(Kind::Str, 8);  // BINUNICODE8
    case 'U': return pushString(Kind::Str, 1);   // SHORT_BINSTRING: Python 2 str, loaded as str by torch
    case 'T': return pushString(Kind::Str, 4, true);  // BINSTRING
    case 'C': return pushString(Kind::Bytes, 1);      // SHORT_BINBYTES
    case 'B': return pushString(Kind::Bytes, 4);      // BINBYTES
    case 0x8e: case 0x96: return pushString(Kind::Bytes, 8);  // BINBYTES8, BYTEARRAY8
    case ')': return push(emptyTuple_);
    case 't': return popMark(m) && push(collect(Kind::Tuple, m));
    case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
      size_t k = code_ - 0x84;
      return need(k) && push(collect(Kind::Tuple, stack_.size() - k));
    }
    case ']': return push(make(Kind::List));
    case 'l': return popMark(m) && push(collect(Kind::List, m));
    case '}': return push(make(Kind::Dict));
    case 'd': return pushDict();  // DICT
    case 0x8f: return push(make(Kind::Set));
    case 0x91: return popMark(m) && push(collect(Kind::Set, m));  // FROZENSET
    case 'a':  // APPEND
      if (!need(2) || !addItems(stack_[stack_.size() - 2], &stack_.back(), 1, Kind::List)) return false;
      stack_.pop_back();
      return true;
    case 's':  // SETITEM
      if (!need(3) || !addItems(stack_[stack_.size() - 3], &stack_[stack_.size() - 2], 2, Kind::Dict)) return false;
      stack_.resize(stack_.size() - 2);
      return true;
    case 'e': case 'u': case 0x90: return addMarkedItems();  // APPENDS, SETITEMS, ADDITEMS
    case 'q': return readUint(1, v) && memoize(v);  // BINPUT
    case 'r': return readUint(4, v) && memoize(v);  // LONG_BINPUT
    case 0x94: return memoize(memoCount_);          // MEMOIZE
    case 'h': case 'j': return memoGet();           // BINGET, LONG_BINGET
    case 'c': {  // GLOBAL
      std::string module, name;
      return readLine(module) && readLine(name) && pushGlobal(module, name);
    }
    case 0x93: return stackGlobal();  // STACK_GLOBAL
    case 'P': {  // PERSID: the id is a line of text
      Obj* pid = make(Kind::Str);
      return readLine(pid->s) && persistentLoad(pid);
    }
    case 'Q': {  // BINPERSID
      if (!need(1)) return false;
      Obj* pid = stack_.back();
      stack_.pop_back();
      return persistentLoad(pid);
    }
    case 'R': return reduce();  // REDUCE: callable(*args)
    case 'b':  // BUILD: sets attributes (a state dict's _metadata) or state the decoder does not model
      if (!need(2)) return false;
      stack_.pop_back();
      return true;
    case 0x81: case 0x92: return newObject();  // NEWOBJ, NEWOBJ_EX
    default: return unknownOpcode();
  }
}

// --- opcodes with more to do than fits a line of step's switch ---

bool Machine::readProtocol() {
  uint64_t v = 0;
  if (!readUint(1, v)) return false;
  return v <= 5 || fail(ErrorCode::Unsupported, "protocol 5 or lower", std::to_string(v));
}

/// FRAME: framing only helps streaming readers, but its length must fit.
bool Machine::skipFrame() {
  uint64_t v = 0;
  if (!readUint(8, v)) return false;
  return v <= n_ - pos_ ||
         fail(ErrorCode::Truncated, "a frame of " + std::to_string(v) + " bytes", std::to_string(n_ - pos_) + " bytes left");
}

bool Machine::pushMark() {
  if (marks_.size() >= kMaxMarks)
    return fail(ErrorCode::Unsupported, "at most " + std::to_string(kMaxMarks) + " open MARKs", "more");
  marks_.push_back(stack_.size());
  return true;
}

/// POP: with nothing above the last MARK, Python drops the MARK.
bool Machine::pop() {
  if (stack_.size() == base() && !marks_.empty()) {
    marks_.pop_back();
    return true;
  }
  if (!need(1)) return false;
  stack_.pop_back();
  return true;
}

/// BINFLOAT: a big-endian double.
bool Machine::pushBinFloat() {
  const uint8_t* p;
  if (!take(8, p)) return false;
  uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v = v << 8 | p[k];
  Obj* o = make(Kind::Float);
  o->f = std::bit_cast<double>(v);
  return push(o);
}

/// DICT: the key-value pairs above the last MARK.
bool Machine::pushDict() {
  size_t m = 0;
  if (!popMark(m)) return false;
  Obj* dict = make(Kind::Dict);
  if (!addItems(dict, stack_.data() + m, stack_.size() - m, Kind::Dict)) return false;
  stack_.resize(m);
  return push(dict);
}

/// APPENDS, SETITEMS, ADDITEMS: the items above the last MARK go into the container below it.
bool Machine::addMarkedItems() {
  size_t m = 0;
  Kind want = code_ == 'e' ? Kind::List : code_ == 'u' ? Kind::Dict : Kind::Set;
  if (!popMark(m, 1) || !addItems(stack_[m - 1], stack_.data() + m, stack_.size() - m, want)) return false;
  stack_.resize(m);
  return true;
}

/// BINGET, LONG_BINGET: a value memoized before.
bool Machine::memoGet() {
  uint64_t v = 0;
  if (!readUint(code_ == 'h' ? 1 : 4, v)) return false;
  Obj* o = v < memo_.size() ? memo_[v] : nullptr;
  return o ? push(o) : fail(ErrorCode::Invalid, "a memo index stored before", "index " + std::to_string(v) + ", never stored");
}

/// STACK_GLOBAL: module and name are strs on the stack.
bool Machine::stackGlobal() {
  if (!need(2)) return false;
  Obj *module = stack_[stack_.size() - 2], *name = stack_.back();
  if (module->kind != Kind::Str || name->kind != Kind::Str)
    return fail(ErrorCode::Invalid, "a module and a name (two strs) on the stack", describe(module) + " and " + describe(name));
  stack_.resize(stack_.size() - 2);
  return pushGlobal(module->s, name->s);
}

/// REDUCE: callable(*args).
bool Machine::reduce() {
  if (!need(2)) return false;
  Obj* args = stack_.back();
  Obj* out = nullptr;
  if (args->kind != Kind::Tuple) return fail(ErrorCode::Invalid, "a tuple on the stack", describe(args));
  return call(stack_[stack_.size() - 2], args, out, 0) && replaceTop(1, out);
}

/// NEWOBJ cls args; NEWOBJ_EX cls args kwargs: an OrderedDict or an object the decoder does not model.
bool Machine::newObject() {
  size_t k = code_ == 0x81 ? 2 : 3;
  if (!need(k)) return false;
  Obj *cls = stack_[stack_.size() - k], *args = stack_[stack_.size() - k + 1];
  if (args->kind != Kind::Tuple) return fail(ErrorCode::Invalid, "a tuple on the stack", describe(args));
  if (k == 3 && stack_.back()->kind != Kind::Dict)
    return fail(ErrorCode::Invalid, "a dict of keyword arguments on the stack", describe(stack_.back()));
  bool dict = cls->kind == Kind::Global && cls->s == "collections.OrderedDict";
  return replaceTop(k - 1, make(dict ? Kind::Dict : Kind::Opaque));
}

/// An opcode torch.save never writes, or a byte that is no opcode.
bool Machine::unknownOpcode() {
  if (const char* name = opName(code_))
    return fail(ErrorCode::Unsupported, "an opcode torch.save writes (protocols 2-5)", std::string(name));
  char found[40];
  std::snprintf(found, sizeof found, "byte 0x%02x, which is no opcode", code_);
  return fail(ErrorCode::Invalid, "a pickle opcode", found);
}

/// torch.save's persistent id: ('storage', storage class, key, location, numel).
bool Machine::persistentLoad(Obj* pid) {
  const auto& a = pid->items;
  if (pid->kind != Kind::Tuple || a.empty() || a[0]->kind != Kind::Str || a[0]->s != "storage")
    return push(make(Kind::Opaque));  // not a storage: nothing the decoder can model
  const char* shape = "('storage', storage class, key, location, numel)";
  if (a.size() != 5) return fail(ErrorCode::Invalid, shape, "a tuple of " + std::to_string(a.size()) + " items");
  std::optional<ScalarType> dtype = a[1]->kind == Kind::Global ? storageDtype(a[1]->s) : std::nullopt;
  if (!dtype) return fail(ErrorCode::Unsupported, "a torch storage class such as torch.FloatStorage", describe(a[1]));
  if (a[2]->kind != Kind::Str || a[2]->s.empty() || a[2]->s.find('/') != std::string::npos)
    return fail(ErrorCode::Invalid, "a storage key (a str without '/')", a[2]->kind == Kind::Str ? reprText(a[2]->s, false) : describe(a[2]));
  if (a[3]->kind != Kind::Str) return fail(ErrorCode::Invalid, "a location str such as 'cpu'", describe(a[3]));
  if (a[4]->kind != Kind::Int || a[4]->i < 0) return fail(ErrorCode::Invalid, "an element count >= 0", shown(a[4]));
  Obj* storage = make(Kind::Storage);
  storage->tensor = std::make_unique<PickledTensor>();
  storage->tensor->storageKey = a[2]->s;
  storage->tensor->dtype = *dtype;
  storage->tensor->storageNumel = static_cast<uint64_t>(a[4]->i);
  storage->tensor->location = a[3]->s;
  return push(storage);
}

/// REDUCE: the callables torch.save uses are modelled; any other call makes an opaque object.
bool Machine::call(Obj* fn, Obj* args, Obj*& out, int depth) {
  const std::vector<Obj*>& a = args->items;
  std::string_view g = fn->kind == Kind::Global ? std::string_view(fn->s) : std::string_view();
  if (g == "collections.OrderedDict" && a.empty()) {  // a state dict; SETITEMS fill it
    out = make(Kind::Dict);
    return true;
  }
  if (g == "builtins.set" || g == "builtins.frozenset" || g == "__builtin__.set" || g == "__builtin__.frozenset") {
    if (a.empty() || (a.size() == 1 && (a[0]->kind == Kind::List || a[0]->kind == Kind::Tuple))) {  // protocol 2 sets
      out = make(Kind::Set);
      if (!a.empty()) out->items = a[0]->items;
      charged_ += 8 * out->items.size();
      return true;
    }
  }
  if (g == "_codecs.encode" && a.size() == 2 && a[0]->kind == Kind::Str && a[1]->kind == Kind::Str &&
      (a[1]->s == "latin1" || a[1]->s == "latin-1")) {  // protocol 2 bytes
    if (auto bytes = latin1(a[0]->s)) {
      out = make(Kind::Bytes);
      out->s = std::move(*bytes);
      charged_ += out->s.size();
      return true;
    }
  }
  if (g == "torch._utils._rebuild_tensor") return rebuildTensor(1, g, a, out);
  if (g == "torch._utils._rebuild_tensor_v2") return rebuildTensor(2, g, a, out);
  if (g == "torch._utils._rebuild_tensor_v3") return rebuildTensor(3, g, a, out);
  if (g == "torch._utils._rebuild_parameter" || g == "torch._utils._rebuild_parameter_with_state") {
    size_t want = g.ends_with("state") ? 4 : 3;  // (data, requires_grad, hooks[, state])
    if (a.size() != want || !isBoolish(a[1]))
      return fail(ErrorCode::Invalid, std::string(g) + "(data, requires_grad: bool, hooks" + (want == 4 ? ", state)" : ")"),
                  std::to_string(a.size()) + " arguments" + (a.size() > 1 ? ", requires_grad " + describe(a[1]) : ""));
    if (a[0]->kind == Kind::Tensor) {
      out = make(Kind::Tensor);
      out->tensor = std::make_unique<PickledTensor>(*a[0]->tensor);
      out->tensor->requiresGrad = a[1]->i != 0;
      return true;
    }
  }
  // A tensor subclass (or a tensor with Python attributes): (func, type, func's args, state).
  if (g == "torch._tensor._rebuild_from_type_v2" && depth == 0 && a.size() == 4 && a[2]->kind == Kind::Tuple)
    return call(a[0], a[2], out, depth + 1);
  out = make(Kind::Opaque);
  return true;
}

/// _rebuild_tensor(storage, offset, size, stride); _v2 adds (requires_grad, hooks[, metadata]);
/// _v3 adds (requires_grad, hooks, dtype[, metadata]) and views an untyped storage as `dtype`.
bool Machine::rebuildTensor(int version, std::string_view fn, const std::vector<Obj*>& a, Obj*& out) {
  size_t lo = version == 1 ? 4 : version == 2 ? 6 : 7, hi = version == 1 ? 4 : lo + 1;
  if (a.size() < lo || a.size() > hi)
    return fail(ErrorCode::Invalid, std::string(fn) + " with " + std::to_string(lo) + (hi > lo ? " or " + std::to_string(hi) : "") + " arguments",
                std::to_string(a.size()));
  if (a[0]->kind != Kind::Storage) return fail(ErrorCode::Invalid, "a storage as " + std::string(fn) + "'s first argument",
                                                  describe(a[0]));
  auto t = std::make_unique<PickledTensor>(*a[0]->tensor);
  if (a[1]->kind != Kind::Int || a[1]->i < 0)
    return fail(ErrorCode::Invalid, "a storage offset >= 0", shown(a[1]));
  t->storageOffset = a[1]->i;
  for (int k = 2; k <= 3; ++k) {
    const char* what = k == 2 ? "sizes" : "strides";
    if (a[k]->kind != Kind::Tuple && a[k]->kind != Kind::List)
      return fail(ErrorCode::Invalid, std::string("a tuple of ") + what, shown(a[k]));
    for (const Obj* x : a[k]->items) {
      if (x->kind != Kind::Int || x->i < 0) return fail(ErrorCode::Invalid, std::string("ints >= 0 as ") + what, shown(x));
      (k == 2 ? t->sizes : t->strides).push_back(x->i);
    }
  }
  if (t->sizes.size() != t->strides.size())
    return fail(ErrorCode::Invalid, "as many strides as sizes", std::to_string(t->strides.size()) + " strides for " + std::to_string(t->sizes.size()) + " sizes");
  if (version >= 2) {
    if (!isBoolish(a[4])) return fail(ErrorCode::Invalid, "a bool requires_grad", describe(a[4]));
    t->requiresGrad = a[4]->i != 0;
  }
  if (version == 3) {  // the storage's bytes, counted in elements of `dtype`
    std::optional<ScalarType> dt;
    if (a[6]->kind == Kind::Global && a[6]->s.starts_with("torch.")) dt = scalarTypeFromName(a[6]->s);
    if (!dt || elementSize(*dt) == 0)
      return fail(ErrorCode::Unsupported, "a torch dtype with an ExecuTorch scalar type", describe(a[6]));
    uint64_t bytes = 0, size = elementSize(*dt);
    if (__builtin_mul_overflow(t->storageNumel, elementSize(t->dtype), &bytes) || bytes % size)
      return fail(ErrorCode::Invalid, "a storage of whole " + std::string(scalarTypeName(*dt)) + " elements",
                  std::to_string(t->storageNumel) + " " + std::string(scalarTypeName(t->dtype)) + " elements");
    t->dtype = *dt;
    t->storageNumel = bytes / size;
  }
  // The view must lie inside the storage (an empty tensor touches nothing).
  bool empty = std::find(t->sizes.begin(), t->sizes.end(), 0) != t->sizes.end();
  uint64_t last = static_cast<uint64_t>(t->storageOffset), span = 0;
  for (size_t k = 0; k < t->sizes.size() && !empty; ++k)
    if (__builtin_mul_overflow(static_cast<uint64_t>(t->sizes[k] - 1), static_cast<uint64_t>(t->strides[k]), &span) ||
        __builtin_add_overflow(last, span, &last))
      return fail(ErrorCode::Overflow, "a view whose extent fits in 64 bits", "an overflowing extent");
  if (!empty && last >= t->storageNumel)
    return fail(ErrorCode::OutOfRange, "a view inside its storage of " + std::to_string(t->storageNumel) + " elements",
                "an element at index " + std::to_string(last));
  out = make(Kind::Tensor);
  out->tensor = std::move(t);
  return true;
}

bool Machine::flatten(Obj* o, std::string& path, int depth, PickledObjects& out) {
  charged_ += 16;
  if (o->kind == Kind::Tensor) {
    charged_ += sizeof(out.tensors[0]) + path.size() + 16 * o->tensor->sizes.size();
    out.tensors.emplace_back(path, *o->tensor);
  } else if (isScalar(o->kind)) {
    PickledScalar scalar{scalarText(o)};
    charged_ += sizeof(out.scalars[0]) + path.size() + scalar.text.size();
    out.scalars.emplace_back(path, std::move(scalar));
  } else if (isContainer(o->kind) && !o->visiting) {  // a container already on the path is a cycle: skip it
    if (depth >= kMaxDepth)
      return failAt(ErrorCode::Unsupported, o->at, "pickle nesting", "at most " + std::to_string(kMaxDepth) + " nested containers",
                    "deeper nesting");
    o->visiting = true;
    bool dict = o->kind == Kind::Dict;
    size_t len = path.size();
    for (size_t k = 0; k < o->items.size(); k += dict ? 2 : 1) {
      if (len) path += '.';
      if (!dict) path += std::to_string(k);
      else if (const Obj* key = o->items[k]; key->kind == Kind::Str) path += key->s;
      else path += isScalar(key->kind) ? scalarText(key) : "<" + describe(key) + ">";
      bool ok = flatten(o->items[dict ? k + 1 : k], path, depth + 1, out);
      path.resize(len);
      if (!ok) return false;
      if (charged_ > budget_) {  // shared subtrees can expand exponentially
        overBudget(o->at);
        return false;
      }
    }
    o->visiting = false;
  }
  return true;
}

}  // namespace

Result<PickledObjects> decodeTorchPickle(const uint8_t* data, size_t size, const std::string& file) {
  if (!data) size = 0;
  return Machine(data, size, file).decode();
}

}  // namespace lstudio
