// python_line_table.h: the source line of a Python instruction, from its code object's co_linetable.
//
// The stack walk (python_stack.h) has, for each frame, only bytes it copied out of the process:
// the code object's co_linetable, co_firstlineno and how far into the instructions the frame is.
// Turning that into a line number is CPython's PyCode_Addr2Line, which gapwatch cannot call: it
// runs inside a user's CUDA call, on a thread that may not hold the GIL, possibly while the
// interpreter is half-way through changing the frame. So the table is decoded here, without the
// interpreter, without allocating, and treating the bytes as untrusted: a table read while it
// was being replaced, or from a frame that was already freed, must give a wrong line or -1,
// never a read past its end. Two formats: 3.10's PEP 626 table (Objects/lnotab_notes.txt) and
// 3.11+'s location table (Objects/locations.md, InternalDocs/locations.md since 3.13).
// tests/unit/python_line_table_test.cpp checks it against each interpreter's co_lines().
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace gapwatch {

// The line of the instruction at byte_offset bytes from the start of the code's instructions
// (3.10: f_lasti * 2; 3.11+: the frame's instruction pointer minus co_code_adaptive, in bytes),
// decoding table[0, table_len) as CPython 3.<minor> writes co_linetable: 3.10's format for 10,
// the location table for 11 and later. -1 where the table gives that instruction no line, where
// byte_offset is negative or past the table's last range, for a minor below 10 (co_lnotab, not
// read), and for a line the table would make negative or larger than an int (only a corrupt table
// does). Reads no byte outside the table and takes time linear in table_len.
int python_line_at(int minor, const uint8_t* table, size_t table_len, int firstlineno, int byte_offset);

}  // namespace gapwatch
