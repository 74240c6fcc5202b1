# cmake -DIN=<manifest> -DOUT=<file.c> -P WarpweaveEmbed.cmake: the manifest as a C string with its size.
file(READ ${IN} content HEX)
string(LENGTH "${content}" hexlen)
math(EXPR size "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
file(WRITE ${OUT} "#include <stddef.h>\n__attribute__((visibility(\"hidden\"))) const char ww_manifest_text[] = {${bytes} 0};\n__attribute__((visibility(\"hidden\"))) const size_t ww_manifest_size = ${size};\n")
