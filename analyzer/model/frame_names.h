// How a native frame's function reads in the text report: a demangled C++ name is mostly its
// parameter types and default template arguments, which say little to the reader and push the
// stack past a screen's width (a checkpoint writer's frame was 173 columns, its stack 522).
// JSON keeps the full names (docs/report-json.md); the HTML report shows them on hover.
#pragma once

#include <string>
#include <string_view>

namespace idlescope {

// A demangled name as the text report prints it:
//   - the function's parameter list and what follows it (" const", " [clone .cold]") dropped:
//     "example::write_checkpoint_file(std::__cxx11::basic_string<...> const&, int)" reads
//     "example::write_checkpoint_file"; a template function's return type dropped too;
//   - in template arguments, trailing arguments that are the standard defaults (std::allocator,
//     std::char_traits, std::less, std::equal_to, std::hash, std::default_delete) dropped, and
//     "std::__cxx11::" read as "std::": "std::vector<int, std::allocator<int> >" reads
//     "std::vector<int>";
//   - the standard typedefs of char instances: "std::basic_string<char>" reads "std::string"
//     (std::wstring, std::string_view, std::ostream, std::istream, std::iostream, std::ofstream,
//     std::ifstream, std::fstream, std::stringstream, std::ostringstream, std::istringstream,
//     std::filebuf, std::streambuf, std::ios likewise);
//   - "(anonymous namespace)", lambdas ("{lambda(int)#1}") and operators kept as they are.
// A name that is not a C++ demangled name (a C function, a mangled name left as it was) comes
// back unchanged.
std::string ShortFunctionName(std::string_view demangled);

}  // namespace idlescope
