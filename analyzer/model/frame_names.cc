#include "analyzer/model/frame_names.h"

#include <array>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace idlescope {
namespace {

bool IsIdentifier(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// When the word "operator" starts at `i`: the length of it and of the operator symbol after it
// ("operator<<", "operator()"), whose brackets are not brackets; 0 otherwise.
size_t OperatorLength(std::string_view s, size_t i) {
  constexpr std::string_view kWord = "operator";
  if (s.substr(i, kWord.size()) != kWord || (i > 0 && IsIdentifier(s[i - 1]))) return 0;
  size_t end = i + kWord.size();
  if (end < s.size() && IsIdentifier(s[end])) return 0;  // "operators", an identifier
  static constexpr std::array<std::string_view, 39> kSymbols = {
      "()", "[]", "<=>", "<<=", ">>=", "->*", "<<", ">>", "<=", ">=", "->", "==", "!=",
      "&&", "||", "++",  "--",  "+=",  "-=",  "*=", "/=", "%=", "^=", "&=", "|=", "<",
      ">",  "=",  "!",   "+",   "-",   "*",   "/",  "%",  "^",  "&",  "|",  "~",  ","};
  for (std::string_view symbol : kSymbols) {
    if (s.substr(end, symbol.size()) == symbol) return end + symbol.size() - i;
  }
  return end - i;
}

// The index of the bracket closing the one at `open` ('<', '(' or '{'), counting every kind of
// bracket; npos when unbalanced.
size_t Closing(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (size_t op = OperatorLength(s, i); op > 0) {
      i += op - 1;
      continue;
    }
    char c = s[i];
    if (c == '<' || c == '(' || c == '{' || c == '[') ++depth;
    if (c == '>' || c == ')' || c == '}' || c == ']') {
      if (--depth == 0) return i;
    }
  }
  return std::string_view::npos;
}

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// `s` split at its commas outside brackets, each part trimmed.
std::vector<std::string_view> TopLevelArguments(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (size_t op = OperatorLength(s, i); op > 0) {
      i += op - 1;
      continue;
    }
    if (s[i] == '<' || s[i] == '(' || s[i] == '{' || s[i] == '[') {
      size_t close = Closing(s, i);
      if (close == std::string_view::npos) break;
      i = close;
      continue;
    }
    if (s[i] == ',') {
      out.push_back(Trimmed(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  out.push_back(Trimmed(s.substr(start)));
  return out;
}

// A template argument that is a standard default when it is not the first: a container's
// allocator, a string's traits, an ordered container's std::less, a hashed one's std::hash and
// std::equal_to, a unique_ptr's deleter.
bool IsDefaultArgument(std::string_view arg) {
  for (std::string_view prefix : {"std::allocator<", "std::char_traits<", "std::less<",
                                  "std::equal_to<", "std::hash<", "std::default_delete<"}) {
    if (arg.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

// `s` with every template argument list rewritten: arguments shortened in turn, trailing
// defaults dropped, "> >" closed as ">>".
std::string WithoutDefaultArguments(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (size_t op = OperatorLength(s, i); op > 0) {
      out.append(s.data() + i, op);
      i += op - 1;
      continue;
    }
    if (s[i] != '<') {
      out += s[i];
      continue;
    }
    size_t close = Closing(s, i);
    if (close == std::string_view::npos) {
      out.append(s.data() + i, s.size() - i);
      break;
    }
    std::vector<std::string> args;
    for (std::string_view arg : TopLevelArguments(s.substr(i + 1, close - i - 1))) {
      args.push_back(WithoutDefaultArguments(arg));
    }
    while (args.size() > 1 && IsDefaultArgument(args.back())) args.pop_back();
    out += '<';
    out += absl::StrJoin(args, ", ");
    out += '>';
    i = close;
  }
  return out;
}

// The index of the '(' that opens the parameter list ending `s` (s ends with ')'); npos when
// unbalanced.
size_t ParameterListStart(std::string_view s) {
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] == ')') ++depth;
    if (s[i] == '(' && --depth == 0) return i;
  }
  return std::string_view::npos;
}

// Where the name starts after a return type ("void foo<int>" is a template function's
// demangling): past the last space outside brackets before the operator word, if any.
size_t NameStart(std::string_view s) {
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (OperatorLength(s, i) > 0) break;  // "operator new", "operator bool": part of the name
    char c = s[i];
    if (c == '<' || c == '(' || c == '{' || c == '[') {
      size_t close = Closing(s, i);
      if (close == std::string_view::npos) break;
      i = close;
      continue;
    }
    if (c == ' ') start = i + 1;
  }
  return start;
}

}  // namespace

std::string ShortFunctionName(std::string_view demangled) {
  std::string s = absl::StrReplaceAll(std::string(demangled), {{"std::__cxx11::", "std::"}});
  std::string_view name = s;
  // GCC's split-off parts: "f(int) [clone .cold]", "f() [clone .isra.0] [clone .cold]".
  for (size_t clone;
       (clone = name.rfind(" [clone ")) != std::string_view::npos && name.back() == ']';) {
    name = name.substr(0, clone);
  }
  // A member function's qualifiers after its parameters.
  for (bool cut = true; cut;) {
    cut = false;
    for (std::string_view q : {" const", " volatile", " &&", " &", " noexcept"}) {
      if (name.size() > q.size() && name.substr(name.size() - q.size()) == q) {
        name.remove_suffix(q.size());
        cut = true;
      }
    }
  }
  if (!name.empty() && name.back() == ')') {
    size_t open = ParameterListStart(name);
    // 0: the whole name is in parentheses, not a function's parameters.
    if (open != std::string_view::npos && open > 0) name = name.substr(0, open);
  }
  name = name.substr(NameStart(name));
  std::string out = WithoutDefaultArguments(name);
  return absl::StrReplaceAll(out, {
                                      {"std::basic_string<char>", "std::string"},
                                      {"std::basic_string<wchar_t>", "std::wstring"},
                                      {"std::basic_string_view<char>", "std::string_view"},
                                      {"std::basic_ostream<char>", "std::ostream"},
                                      {"std::basic_istream<char>", "std::istream"},
                                      {"std::basic_iostream<char>", "std::iostream"},
                                      {"std::basic_ofstream<char>", "std::ofstream"},
                                      {"std::basic_ifstream<char>", "std::ifstream"},
                                      {"std::basic_fstream<char>", "std::fstream"},
                                      {"std::basic_stringstream<char>", "std::stringstream"},
                                      {"std::basic_ostringstream<char>", "std::ostringstream"},
                                      {"std::basic_istringstream<char>", "std::istringstream"},
                                      {"std::basic_filebuf<char>", "std::filebuf"},
                                      {"std::basic_streambuf<char>", "std::streambuf"},
                                      {"std::basic_ios<char>", "std::ios"},
                                  });
}

}  // namespace idlescope
