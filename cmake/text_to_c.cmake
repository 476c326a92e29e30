# text_to_c.cmake — writes the text of file IN as the C string NAME into
# OUT (cmake -DIN=... -DOUT=... -DNAME=... -P text_to_c.cmake): how
# common/hkmath.h reaches the preludes (codegen/prelude.c) as text.
file(READ ${IN} text)
# Without its comments (hkmath.h has its words where it is read; every
# generated unit carries the code, and tier jit hashes and scans it).
string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" "" text "${text}")
string(REGEX REPLACE "[ \t]+\n" "\n" text "${text}")
string(REGEX REPLACE "\n\n+" "\n" text "${text}")
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "\n" "\\n\"\n  \"" text "${text}")
get_filename_component(src ${IN} NAME)
file(WRITE ${OUT}.tmp
     "/* Generated from common/${src} by cmake/text_to_c.cmake. */\n"
     "extern const char ${NAME}[];\n"
     "const char ${NAME}[] =\n  \"${text}\";\n")
file(RENAME ${OUT}.tmp ${OUT})
