# Turns every schemas/*.avsc (and the earlier versions kept in schemas/previous/,
# named <Record>_v<N>.avsc) into a C string so binaries need no schema files at
# run time. Invoked by the build as: cmake -DOUT=... -DSCHEMA_DIR=... -P embed.cmake
file(GLOB files ${SCHEMA_DIR}/*.avsc ${SCHEMA_DIR}/previous/*.avsc)
list(SORT files)
set(body "/* Generated from the schemas/ .avsc files by schemas/embed.cmake. Do not edit. */\n")
string(APPEND body "#include <stddef.h>\n\n")
set(table "")
foreach(f ${files})
  get_filename_component(name ${f} NAME_WE)
  file(READ ${f} hex HEX)
  string(LENGTH "${hex}" hexlen)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(APPEND body "static const char schema_${name}[] = {${bytes} 0x00};\n")
  string(APPEND table "    {\"${name}\", schema_${name}},\n")
endforeach()
string(APPEND body "\nconst struct mc_embedded_schema { const char *file; const char *json; } mc_embedded_schemas[] = {\n${table}    {NULL, NULL}};\n")
file(WRITE ${OUT}.tmp "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
