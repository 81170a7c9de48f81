// Operator schema parser and printer: a hand-written recursive-descent reader
// of the schema language used by native_functions.yaml and torch.library.
#include "engine/ir/OpSchema.h"

#include <cctype>
#include <set>

namespace lstudio {

namespace {

struct BaseSpelling {
  std::string_view word;
  SchemaType::Base base;
};

constexpr BaseSpelling kBases[] = {
    {"Tensor", SchemaType::Base::Tensor},
    {"int", SchemaType::Base::Int},
    {"SymInt", SchemaType::Base::SymInt},
    {"float", SchemaType::Base::Float},
    {"bool", SchemaType::Base::Bool},
    {"str", SchemaType::Base::Str},
    {"Scalar", SchemaType::Base::Scalar},
    {"ScalarType", SchemaType::Base::ScalarType},
    {"Layout", SchemaType::Base::Layout},
    {"Device", SchemaType::Base::Device},
    {"MemoryFormat", SchemaType::Base::MemoryFormat},
    {"Generator", SchemaType::Base::Generator},
    {"Dimname", SchemaType::Base::Dimname},
    {"Storage", SchemaType::Base::Storage},
    {"Any", SchemaType::Base::Any},
};

bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool isAliasChar(char c) {
  return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '|' ||
         c == '*';
}

/// The leading word of a spelling ("SymFloat" in "SymFloat[]?").
std::string_view leadingWord(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && isIdentChar(s[n])) ++n;
  return s.substr(0, n);
}

class Parser {
 public:
  explicit Parser(std::string_view text) : t_(text) {}

  Result<OpSchema> schema(std::string_view defaultNamespace) {
    OpSchema s;
    skipBlanks();
    std::string first;
    if (!ident(first)) return fail("an operator name");
    if (t_.substr(p_, 2) == "::") {
      p_ += 2;
      s.ns = std::move(first);
      if (!ident(s.name)) return fail("an operator name after \"::\"");
    } else {
      s.ns = std::string(defaultNamespace);
      s.name = std::move(first);
    }
    if (peek() == '.') {
      ++p_;
      if (!ident(s.overload)) return fail("an overload name after \".\"");
    }
    skipBlanks();
    if (!eat('(')) return fail("'(' to open the arguments");
    if (auto st = arguments(s); !st) return st.error();
    skipBlanks();
    if (t_.substr(p_, 2) != "->") return fail("\"->\" before the returns");
    p_ += 2;
    skipBlanks();
    if (auto st = returns(s); !st) return st.error();
    skipBlanks();
    if (p_ != t_.size()) return fail("the end of the schema");
    return s;
  }

 private:
  std::string_view t_;
  size_t p_ = 0;

  char peek() const { return p_ < t_.size() ? t_[p_] : '\0'; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++p_;
    return true;
  }
  void skipBlanks() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_]))) ++p_;
  }
  bool ident(std::string& out) {
    if (p_ >= t_.size() || !isIdentStart(t_[p_])) return false;
    size_t b = p_;
    while (p_ < t_.size() && isIdentChar(t_[p_])) ++p_;
    out.assign(t_.substr(b, p_ - b));
    return true;
  }

  /// What the text holds at `at`, quoted and cut short, for error messages.
  std::string foundAt(size_t at) const {
    if (at >= t_.size()) return "the end of the text";
    std::string_view rest = t_.substr(at, 16);
    return "\"" + std::string(rest) + (at + 16 < t_.size() ? "...\"" : "\"");
  }
  Error failAt(size_t at, std::string expected) const {
    return Error{ErrorCode::Invalid, {}, at, "operator schema", std::move(expected), foundAt(at)};
  }
  Error fail(std::string expected) const { return failAt(p_, std::move(expected)); }

  /// "(a)", "(a!)", "(a -> *)", "(a|b)": the part inside the parentheses.
  Status annotation(SchemaArgument& a) {
    ++p_;  // '('
    skipBlanks();
    size_t b = p_;
    while (p_ < t_.size() && isAliasChar(t_[p_])) ++p_;
    if (p_ == b) return fail("an alias set such as 'a' in the annotation");
    a.aliasSet.assign(t_.substr(b, p_ - b));
    skipBlanks();
    if (eat('!')) a.isWrite = true;
    skipBlanks();
    if (t_.substr(p_, 2) == "->") {
      p_ += 2;
      skipBlanks();
      b = p_;
      while (p_ < t_.size() && isAliasChar(t_[p_])) ++p_;
      if (p_ == b) return fail("an alias set after \"->\" in the annotation");
      a.aliasAfterSet.assign(t_.substr(b, p_ - b));
      skipBlanks();
    }
    if (!eat(')')) return fail("')' to close the alias annotation");
    return Ok{};
  }

  /// A type with its optional alias annotation, written into `a`.
  Status type(SchemaArgument& a) {
    SchemaType& ty = a.type;
    std::string word;
    if (!ident(word)) return fail("a type");
    ty.base = SchemaType::Base::Other;
    for (const auto& b : kBases)
      if (b.word == word) ty.base = b.base;
    // Some files put a blank between the type and its annotation ("Tensor (a!)").
    size_t afterWord = p_;
    skipBlanks();
    if (peek() == '(') {
      if (auto st = annotation(a); !st) return st;
    } else {
      p_ = afterWord;
    }
    ty.spelling = word;
    bool elementOptional = eat('?');
    if (elementOptional) ty.spelling += '?';
    if (peek() == '[') {
      size_t open = p_++;
      size_t b = p_;
      while (p_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[p_]))) ++p_;
      if (p_ > b) {
        if (p_ - b > 6) return failAt(b, "a list size below 1000000");
        ty.fixedSize = std::stoi(std::string(t_.substr(b, p_ - b)));
        if (ty.fixedSize < 1) return failAt(b, "a list size of at least 1");
      }
      if (!eat(']')) return fail("']' to close the list type");
      ty.list = true;
      ty.optionalElements = elementOptional;
      ty.spelling += t_.substr(open, p_ - open);
      if (eat('?')) {
        ty.optional = true;
        ty.spelling += '?';
      }
      if (peek() == '[') return fail("a single list level (lists of lists are not schema types)");
    } else {
      ty.optional = elementOptional;
    }
    if (peek() == '?') return fail("a single '?'");
    return Ok{};
  }

  /// A default value: everything up to the next ',' or ')' outside brackets and quotes.
  Status defaultValue(SchemaArgument& a) {
    skipBlanks();
    size_t b = p_;
    int depth = 0;
    while (p_ < t_.size()) {
      char c = t_[p_];
      if (c == '"' || c == '\'') {
        size_t open = p_++;
        while (p_ < t_.size() && t_[p_] != c) p_ += (t_[p_] == '\\' && p_ + 1 < t_.size()) ? 2 : 1;
        if (p_ >= t_.size()) return failAt(open, "a closing quote for the string default");
        ++p_;
        continue;
      }
      if (c == '[' || c == '(') ++depth;
      if (c == ']' || c == ')') {
        if (depth == 0) break;
        --depth;
      }
      if (c == ',' && depth == 0) break;
      ++p_;
    }
    size_t e = p_;
    while (e > b && std::isspace(static_cast<unsigned char>(t_[e - 1]))) --e;
    if (e == b) return failAt(b, "a default value after '='");
    if (depth != 0) return failAt(b, "balanced brackets in the default value");
    a.defaultValue = std::string(t_.substr(b, e - b));
    return Ok{};
  }

  Status arguments(OpSchema& s) {
    skipBlanks();
    if (eat(')')) return Ok{};
    bool kwargOnly = false;
    std::set<std::string> names;
    while (true) {
      skipBlanks();
      if (peek() == '*') {
        if (kwargOnly) return fail("a single '*' marker");
        ++p_;
        kwargOnly = true;
        skipBlanks();
        if (!eat(',')) return fail("',' and a keyword-only argument after '*'");
        continue;
      }
      SchemaArgument a;
      a.kwargOnly = kwargOnly;
      if (auto st = type(a); !st) return st;
      skipBlanks();
      size_t nameAt = p_;
      if (!ident(a.name)) return fail("an argument name");
      if (!names.insert(a.name).second) return failAt(nameAt, "a unique argument name");
      skipBlanks();
      if (eat('=')) {
        if (auto st = defaultValue(a); !st) return st;
        skipBlanks();
      }
      s.arguments.push_back(std::move(a));
      if (eat(')')) return Ok{};
      if (!eat(',')) return fail("',' or ')' after an argument");
    }
  }

  Status oneReturn(OpSchema& s) {
    SchemaArgument r;
    if (auto st = type(r); !st) return st;
    skipBlanks();
    if (isIdentStart(peek())) ident(r.name);
    skipBlanks();
    if (peek() == '=') return fail("no default value on a return");
    s.returns.push_back(std::move(r));
    return Ok{};
  }

  Status returns(OpSchema& s) {
    if (!eat('(')) return oneReturn(s);
    skipBlanks();
    if (eat(')')) return Ok{};
    while (true) {
      skipBlanks();
      if (auto st = oneReturn(s); !st) return st;
      skipBlanks();
      if (eat(')')) return Ok{};
      if (!eat(',')) return fail("',' or ')' after a return");
    }
  }
};

}  // namespace

const char* schemaBaseName(SchemaType::Base base) {
  for (const auto& b : kBases)
    if (b.base == base) return b.word.data();
  return "Other";
}

std::string SchemaType::toString(std::string_view annotation) const {
  std::string s;
  if (base == Base::Other) {
    std::string_view w = leadingWord(spelling);
    s = w.empty() ? std::string("Any") : std::string(w);
  } else {
    s = schemaBaseName(base);
  }
  s += annotation;
  if (list) {
    if (optionalElements) s += '?';
    s += '[';
    if (fixedSize > 0) s += std::to_string(fixedSize);
    s += ']';
  }
  if (optional) s += '?';
  return s;
}

std::string SchemaArgument::toString() const {
  std::string annotation;
  if (!aliasSet.empty()) {
    annotation = "(" + aliasSet + (isWrite ? "!" : "");
    if (!aliasAfterSet.empty()) annotation += " -> " + aliasAfterSet;
    annotation += ")";
  }
  std::string s = type.toString(annotation);
  if (!name.empty()) s += " " + name;
  if (defaultValue) s += "=" + *defaultValue;
  return s;
}

bool OpSchema::isOutVariant() const {
  std::set<std::string> outSets;
  for (const auto& a : arguments)
    if (a.kwargOnly && a.isWrite) outSets.insert(a.aliasSet);
  if (outSets.empty()) return false;
  // A returned tensor that aliases nothing, or aliases a non-out argument, is a new
  // result: then this is a functional or mutable op that merely takes a write arg.
  for (const auto& r : returns) {
    if (r.aliasSet.empty()) {
      if (r.type.isTensorLike()) return false;
      continue;
    }
    if (!outSets.count(r.aliasSet)) return false;
  }
  return true;
}

bool OpSchema::isInplace() const {
  if (name.empty() || name.back() != '_') return false;
  for (const auto& a : arguments)
    if (a.name == "self") return a.isWrite;
  return false;
}

std::string OpSchema::qualifiedName() const {
  std::string q = ns.empty() ? name : ns + "::" + name;
  if (!overload.empty()) q += "." + overload;
  return q;
}

std::string OpSchema::toString() const {
  std::string s = qualifiedName() + "(";
  bool first = true, kw = false;
  for (const auto& a : arguments) {
    if (!first) s += ", ";
    first = false;
    if (a.kwargOnly && !kw) {
      s += "*, ";
      kw = true;
    }
    s += a.toString();
  }
  s += ") -> ";
  // One return is written bare ("-> Tensor", "-> Tensor qc"); none or several in parentheses.
  if (returns.size() == 1) return s + returns[0].toString();
  s += "(";
  for (size_t i = 0; i < returns.size(); ++i) {
    if (i) s += ", ";
    s += returns[i].toString();
  }
  return s + ")";
}

Result<OpSchema> parseSchema(std::string_view text, std::string_view defaultNamespace) {
  return Parser(text).schema(defaultNamespace);
}

}  // namespace lstudio
