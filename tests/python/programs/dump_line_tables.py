# Prints the line tables of many code objects with the lines CPython itself gives every
# instruction (co_lines()), for tests/python/line_table_test.cc to compare with
# interpose/python/line_table.cc. Output:
#   version MAJOR MINOR
#   code FIRST_LINE UNITS TABLE_HEX     (one per code object)
#   lines L0 L1 ...                      (the line of each code unit; -1 = none)
import os
import sys
import sysconfig
import types


def codes(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from codes(const)


def main():
    print("version", sys.version_info[0], sys.version_info[1])
    stdlib = sysconfig.get_paths()["stdlib"]
    # Modules with long functions, comprehensions, generators, decorators, try/except and
    # lines far apart (long jumps in the table), and this file.
    sources = [os.path.join(stdlib, name) for name in
               ("threading.py", "dataclasses.py", "json/decoder.py", "asyncio/base_events.py",
                "typing.py", "argparse.py")]
    sources.append(os.path.abspath(__file__))
    for path in sources:
        with open(path, encoding="utf-8") as f:
            top = compile(f.read(), path, "exec")
        for code in codes(top):
            units = len(code.co_code) // 2
            lines = [-1] * units
            for start, end, line in code.co_lines():
                for byte in range(start, end, 2):
                    if byte // 2 < units:
                        lines[byte // 2] = -1 if line is None else line
            print("code", code.co_firstlineno, units, code.co_linetable.hex())
            print("lines", *lines)


main()
