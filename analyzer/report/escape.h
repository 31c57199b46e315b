// Names a job gave us (paths, command lines, host, thread and function names: bytes the traced
// program chose) as text that is safe on a terminal and in a line-oriented report. The text report,
// `idlescope dump` and the CLI's messages print every such name through EscapeControls, so that
// no escape sequence of a name reaches the user's terminal (clearing it, retitling the window,
// rewriting what was printed) and no newline in a name starts a line the report did not write.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace idlescope {

// The length of the well-formed UTF-8 sequence at s[at] (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0.
size_t Utf8SequenceLength(std::string_view s, size_t at);

// `bytes` with every character that is not printable written as an escape, as C and
// `idlescope dump` write them: newline, carriage return and tab as \n, \r, \t, the backslash as
// \\ (so that an escape is never ambiguous), and as \xNN per byte:
//   - the other C0 controls and DEL;
//   - the C1 controls U+0080-U+009F (terminals act on them too), and the bytes 0x80-0x9f that are
//     not part of a UTF-8 sequence (the same controls to a terminal in an 8-bit locale);
//   - the line and paragraph separators U+2028 and U+2029 (newlines to some viewers) and the
//     bidirectional formatting characters U+202A-U+202E and U+2066-U+2069 (they reorder what is
//     shown around them: CVE-2021-42574).
// Everything else is kept as it is: printable ASCII, well-formed UTF-8, and the other bytes that
// are not UTF-8 (a Latin-1 file name reads in a Latin-1 terminal; JSON writes them as U+FFFD).
std::string EscapeControls(std::string_view bytes);

}  // namespace idlescope
