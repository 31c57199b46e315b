// ShortFunctionName (analyzer/model/frame_names.h): demangled names as the text report prints
// them, from names the recorder wrote for real frames (the CUDA examples, libstdc++, PyTorch).
#include "analyzer/model/frame_names.h"

#include <gtest/gtest.h>

#include <string>

#include "analyzer/model/labels.h"
#include "analyzer/model/report_symbols.h"

namespace idlescope {
namespace {

struct NameCase {
  const char* demangled;
  const char* expected;
};

TEST(FrameNamesTest, ShortFunctionName) {
  const NameCase cases[] = {
      // The demo's checkpoint writer (examples/cuda/checkpoint_io.h).
      {"example::write_checkpoint_file(std::__cxx11::basic_string<char, std::char_traits<char>, "
       "std::allocator<char> > const&, void const*, unsigned long, int)",
       "example::write_checkpoint_file"},
      {"example::save_checkpoint_sync(float const*, void*, unsigned long, std::__cxx11::"
       "basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int)",
       "example::save_checkpoint_sync"},
      // An anonymous namespace stays readable, in the name and not cut as a parameter list.
      {"(anonymous namespace)::train((anonymous namespace)::Options const&)",
       "(anonymous namespace)::train"},
      {"(anonymous namespace)", "(anonymous namespace)"},
      // C functions and names without parameters are left as they are.
      {"main", "main"},
      {"__libc_start_main", "__libc_start_main"},
      {"_ZN7example5trainEv", "_ZN7example5trainEv"},
      {"", ""},
      // Default template arguments dropped, the char typedefs used.
      {"std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(__gnu_cxx::"
       "__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int const&)",
       "std::vector<int>::_M_realloc_insert<int const&>"},
      {"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::"
       "_M_append(char const*, unsigned long)",
       "std::string::_M_append"},
      {"std::basic_ostream<char, std::char_traits<char> >::write(char const*, long)",
       "std::ostream::write"},
      {"std::basic_filebuf<char, std::char_traits<char> >::xsputn(char const*, long)",
       "std::filebuf::xsputn"},
      {"std::map<int, std::__cxx11::basic_string<char, std::char_traits<char>, "
       "std::allocator<char> >, std::less<int>, std::allocator<std::pair<int const, "
       "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > > > "
       ">::operator[](int const&)",
       "std::map<int, std::string>::operator[]"},
      {"std::unordered_map<long, float, std::hash<long>, std::equal_to<long>, "
       "std::allocator<std::pair<long const, float> > >::find(long const&) const",
       "std::unordered_map<long, float>::find"},
      {"std::unique_ptr<example::Writer, std::default_delete<example::Writer> >::~unique_ptr()",
       "std::unique_ptr<example::Writer>::~unique_ptr"},
      // A default-looking first argument is the argument itself, not a default.
      {"std::vector<std::allocator<int>, std::allocator<std::allocator<int> > >::size() const",
       "std::vector<std::allocator<int>>::size"},
      // Qualifiers and GCC's split-off parts after the parameters.
      {"example::Writer::flush() const", "example::Writer::flush"},
      {"example::Writer::take() &&", "example::Writer::take"},
      {"example::write_all(int, void const*, unsigned long) [clone .cold]", "example::write_all"},
      {"foo(int) [clone .isra.0] [clone .cold]", "foo"},
      // A template function's return type.
      {"void example::fill<float>(float*, unsigned long)", "example::fill<float>"},
      {"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > "
       "example::name<int>(int)",
       "example::name<int>"},
      // Operators: their brackets are no brackets; "operator new" keeps its space.
      {"example::Ring::operator()(int)", "example::Ring::operator()"},
      {"example::Ring::operator<(example::Ring const&) const", "example::Ring::operator<"},
      {"std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<"
       "char> >(std::basic_ostream<char, std::char_traits<char> >&, char const*)",
       "std::operator<< <std::char_traits<char>>"},
      {"operator new(unsigned long)", "operator new"},
      {"example::Ring::operator bool() const", "example::Ring::operator bool"},
      // Lambdas and local scopes keep their own parameter lists.
      {"example::run(int)::{lambda(int)#1}::operator()(int) const",
       "example::run(int)::{lambda(int)#1}::operator()"},
      {"std::thread::_State_impl<std::thread::_Invoker<std::tuple<void (*)(int), int> > >::"
       "_M_run()",
       "std::thread::_State_impl<std::thread::_Invoker<std::tuple<void (*)(int), int>>>::_M_run"},
      // PyTorch's, from a real trace (the cast in the demangling is part of the name).
      {"at::native::copy_(at::Tensor&, at::Tensor const&, bool)", "at::native::copy_"},
      {"c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<c10::"
       "CompileTimeFunctionPointer<at::Tensor& (c10::DispatchKeySet, at::Tensor&, at::Tensor "
       "const&, bool), &torch::autograd::VariableType::(anonymous namespace)::copy_>, at::Tensor&,"
       " c10::guts::typelist::typelist<c10::DispatchKeySet, at::Tensor&, at::Tensor const&, bool>"
       " >, at::Tensor& (c10::DispatchKeySet, at::Tensor&, at::Tensor const&, bool)>::call("
       "c10::OperatorKernel*, c10::DispatchKeySet, at::Tensor&, at::Tensor const&, bool)",
       "c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<c10::"
       "CompileTimeFunctionPointer<at::Tensor& (c10::DispatchKeySet, at::Tensor&, at::Tensor "
       "const&, bool), &torch::autograd::VariableType::(anonymous namespace)::copy_>, at::Tensor&,"
       " c10::guts::typelist::typelist<c10::DispatchKeySet, at::Tensor&, at::Tensor const&, "
       "bool>>, at::Tensor& (c10::DispatchKeySet, at::Tensor&, at::Tensor const&, bool)>::call"},
  };
  for (const NameCase& c : cases) {
    EXPECT_EQ(ShortFunctionName(c.demangled), c.expected) << c.demangled;
  }
}

// A stack as the text report prints it: short names, "FILE:LINE in" where the line is known, the
// common tail dropped; the full label (the key stacks are merged by, JSON's) keeps everything.
TEST(FrameNamesTest, ShortStackLabel) {
  ReportSymbols s;
  const StringId exe = s.Intern("/w/build/mixed"),
                 libc = s.Intern("/lib/x86_64-linux-gnu/libc.so.6");
  const std::vector<ReportFrame> frames = {
      {.function = s.Intern("example::write_checkpoint_file(std::__cxx11::basic_string<char, "
                            "std::char_traits<char>, std::allocator<char> > const&, int)"),
       .module = exe,
       .rel_pc = 0x5769,
       .file = s.Intern("/w/examples/cuda/checkpoint_io.h"),
       .line = 40},
      {.function = s.Intern("(anonymous namespace)::train((anonymous namespace)::Options const&)"),
       .module = exe,
       .rel_pc = 0x482f,
       .file = s.Intern("/w/examples/cuda/mixed.cu"),
       .line = 134},
      {.function = s.Intern("main"), .module = exe, .rel_pc = 0x3997},
      {.module = libc, .rel_pc = 0x27249},
      {.function = s.Intern("__libc_start_main"), .module = libc, .rel_pc = 0x27304},
      {.function = s.Intern("_start"), .module = exe, .rel_pc = 0x3b70},
  };
  StackId id = s.InternStack(frames);
  EXPECT_EQ(s.ShortStackLabel(id),
            "checkpoint_io.h:40 in example::write_checkpoint_file <- mixed.cu:134 in "
            "(anonymous namespace)::train");
  EXPECT_EQ(ShortStackText(id, s), s.ShortStackLabel(id));
  EXPECT_EQ(s.StackLabel(id),
            "checkpoint_io.h:40 in example::write_checkpoint_file(std::__cxx11::basic_string<char, "
            "std::char_traits<char>, std::allocator<char> > const&, int) <- mixed.cu:134 in "
            "(anonymous namespace)::train((anonymous namespace)::Options const&) <- main <- "
            "libc.so.6+0x27249 <- __libc_start_main <- _start");
  // The same functions called from another line are another stack.
  std::vector<ReportFrame> other = frames;
  other[1].line = 140;
  EXPECT_NE(s.InternStack(other), id);

  // A stack that is only the tail keeps its innermost frame; a thread's start is tail too.
  StackId just_main = s.InternStack({frames[2], frames[3], frames[4], frames[5]});
  EXPECT_EQ(s.ShortStackLabel(just_main), "main");
  StackId thread = s.InternStack({{.function = s.Intern("fwrite"), .module = libc},
                                  {.function = s.Intern("writer_loop(void*)"), .module = exe},
                                  {.function = s.Intern("start_thread"), .module = libc},
                                  {.function = s.Intern("clone3"), .module = libc}});
  EXPECT_EQ(s.ShortStackLabel(thread), "fwrite <- writer_loop");

  // Library frames innermost: the job's own frame leads, the stack follows.
  const StringId libstdcxx = s.Intern("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
  std::vector<ReportFrame> through_libraries = {
      {.function = s.Intern("write"),
       .module = libc,
       .file = s.Intern("../sysdeps/unix/sysv/linux/write.c"),
       .line = 26},
      {.function = s.Intern("std::basic_ostream<char, std::char_traits<char> >::write(char "
                            "const*, long)"),
       .module = libstdcxx},
      frames[0],
      frames[1],
      frames[2]};
  EXPECT_EQ(s.ShortStackLabel(s.InternStack(through_libraries)),
            "checkpoint_io.h:40 in example::write_checkpoint_file [write.c:26 in write <- "
            "std::ostream::write <- checkpoint_io.h:40 in example::write_checkpoint_file <- "
            "mixed.cu:134 in (anonymous namespace)::train]");
  // Not without a line (no debug info), nor from an installed package.
  through_libraries[2].file = 0;
  through_libraries[3].module = s.Intern("/venv/lib/python3.11/site-packages/x/lib.so");
  EXPECT_EQ(s.ShortStackLabel(s.InternStack(through_libraries)),
            "write.c:26 in write <- std::ostream::write <- example::write_checkpoint_file <- "
            "mixed.cu:134 in (anonymous namespace)::train");
}

}  // namespace
}  // namespace idlescope
