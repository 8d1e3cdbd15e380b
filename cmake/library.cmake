# The library as a user links it: libloom.a and libloom.so (in <build>/lib), installed
# with the public headers and a pkg-config file, loom.pc (`cmake --install`). The CLI,
# tests and fuzzers keep linking the module archives (loom_quant ... loom_server); both
# artefacts are made from those archives' objects, so nothing is compiled twice (the
# modules are position-independent for that: see loom_module).
#
# Only loom_* names are global in either. The modules share their internals through
# plain global names (gguf_hash, llm_build_llama, be_find, gbnf_parse, ...) that would
# clash with a user's program or another library (ggml's gguf_*, a static jansson):
#  - libloom.a: `ld -r --whole-archive` links every module archive into one
#    relocatable object (the references between modules are resolved there), then
#    `objcopy --wildcard --keep-global-symbol='loom_*'` makes every other defined symbol
#    local; undefined references (libc, jansson, libmicrohttpd) stay global. Localizing by
#    pattern needs no change to any header or source file, unlike -fvisibility=hidden
#    with an export macro (then `objcopy --localize-hidden`). The archive holds that one
#    object: a program that links libloom.a gets all of Loom and needs every library
#    of loom.pc's Libs.private / Requires.private (`pkg-config --static --libs loom`).
#  - libloom.so: linked from the same object with a version script that exports loom_*
#    only (cmake/loom.map), which also keeps anything a static dependency brings in out
#    of the dynamic symbol table. Soname libloom.so.<major>.
# tests/lib/check_symbols.sh (test_lib_symbols) holds both to this; tests/lib/consumer.c
# (test_lib_static*, test_lib_shared*) links and runs a program against each.

include(GNUInstallDirs)

set(loom_lib_modules loom_quant loom_gguf loom_core loom_cpu loom_backend loom_llm loom_grammar)
foreach(m template chat server)
  if(TARGET loom_${m})
    list(APPEND loom_lib_modules loom_${m})
  endif()
endforeach()

# What the library needs besides libc, as targets (loom_lib_deps: jansson, then the
# rest in loom_lib_other_deps) and for loom.pc.
set(loom_lib_other_deps Threads::Threads m)
set(LOOM_PC_REQUIRES "")
set(LOOM_PC_LIBS "")
if(LOOM_JANSSON)
  if(LOOM_JANSSON STREQUAL "PkgConfig::JANSSON")
    string(APPEND LOOM_PC_REQUIRES " jansson")
  else()
    string(APPEND LOOM_PC_LIBS " ${JANSSON_LIBRARY}")
  endif()
endif()
if(TARGET loom_server)
  list(APPEND loom_lib_other_deps PkgConfig::MHD)
  string(APPEND LOOM_PC_REQUIRES " libmicrohttpd")
endif()
if(LOOM_HAVE_VULKAN)
  # the Vulkan loader is opened with dlopen at run time, not linked (cmake/vulkan.cmake)
  list(APPEND loom_lib_other_deps ${CMAKE_DL_LIBS})
  foreach(l ${CMAKE_DL_LIBS})
    string(APPEND LOOM_PC_LIBS " -l${l}")
  endforeach()
endif()
string(APPEND LOOM_PC_LIBS " -lpthread -lm")
set(loom_lib_deps ${LOOM_JANSSON} ${loom_lib_other_deps})
string(STRIP "${LOOM_PC_REQUIRES}" LOOM_PC_REQUIRES)
string(STRIP "${LOOM_PC_LIBS}" LOOM_PC_LIBS)

# libloom.so needs position-independent dependencies: it is left out with a static
# jansson archive (-DJANSSON_LIBRARY=.../libjansson.a, as for a fully static CLI) and
# with -static executables (which could not load it).
set(loom_lib_shared ON)
if((LOOM_JANSSON STREQUAL "loom_jansson" AND JANSSON_LIBRARY MATCHES "\\.a$")
   OR CMAKE_EXE_LINKER_FLAGS MATCHES "(^| )-static( |$)")
  set(loom_lib_shared OFF)
  message(STATUS "libloom.so: off (static jansson archive or -static executables); libloom.a only")
endif()

set(loom_lib_dir ${CMAKE_BINARY_DIR}/lib)
set(loom_lib_obj ${loom_lib_dir}/loom.o)
set(loom_lib_archives "")
foreach(m ${loom_lib_modules})
  list(APPEND loom_lib_archives $<TARGET_FILE:${m}>)
endforeach()
add_custom_command(OUTPUT ${loom_lib_obj}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${loom_lib_dir}
  COMMAND ${CMAKE_LINKER} -r -o ${loom_lib_obj}.all --whole-archive ${loom_lib_archives} --no-whole-archive
  COMMAND ${CMAKE_OBJCOPY} --wildcard --keep-global-symbol=loom_* ${loom_lib_obj}.all ${loom_lib_obj}
  COMMAND ${CMAKE_COMMAND} -E rm -f ${loom_lib_obj}.all
  DEPENDS ${loom_lib_modules} ${CMAKE_CURRENT_LIST_FILE}
  COMMENT "Linking lib/loom.o: every module, loom_* global, the rest local"
  VERBATIM)
# One owner for the rule: both libraries wait for it instead of running it twice.
add_custom_target(loom_lib_object DEPENDS ${loom_lib_obj})
set_source_files_properties(${loom_lib_obj} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)

add_library(loom_static STATIC ${loom_lib_obj})
set(loom_lib_targets loom_static)
if(loom_lib_shared)
  add_library(loom_shared SHARED ${loom_lib_obj})
  list(APPEND loom_lib_targets loom_shared)
  set_target_properties(loom_shared PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
                        LINK_DEPENDS ${CMAKE_SOURCE_DIR}/cmake/loom.map)
  target_link_options(loom_shared PRIVATE -Wl,--version-script=${CMAKE_SOURCE_DIR}/cmake/loom.map)
  if(NOT (LOOM_SANITIZE OR LOOM_TSAN OR LOOM_FUZZ))
    # every reference resolved by the libraries listed (not under sanitizers: clang
    # leaves their run-time out of shared objects)
    target_link_options(loom_shared PRIVATE -Wl,-z,defs)
  endif()
  target_link_libraries(loom_shared PRIVATE ${loom_lib_deps})
endif()
foreach(t ${loom_lib_targets})
  add_dependencies(${t} loom_lib_object)
  set_target_properties(${t} PROPERTIES OUTPUT_NAME loom LINKER_LANGUAGE C
                        ARCHIVE_OUTPUT_DIRECTORY ${loom_lib_dir} LIBRARY_OUTPUT_DIRECTORY ${loom_lib_dir})
  target_include_directories(${t} INTERFACE $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
                                            $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endforeach()

# loom.pc, relocatable: prefix is found from the file's own place when the
# directories are relative to it (the usual case).
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(LOOM_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(LOOM_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH rel "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" rel "${rel}")
  set(LOOM_PC_PREFIX "\${pcfiledir}/${rel}")
  set(LOOM_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(LOOM_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(LOOM_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${CMAKE_SOURCE_DIR}/cmake/loom.pc.in ${loom_lib_dir}/loom.pc @ONLY)

install(TARGETS ${loom_lib_targets}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${pub_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${loom_lib_dir}/loom.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# ---- tests
# Every defined global or weak symbol of libloom.a and libloom.so is a loom_* name.
set(loom_lib_files "")
foreach(t ${loom_lib_targets})
  list(APPEND loom_lib_files $<TARGET_FILE:${t}>)
endforeach()
add_test(NAME test_lib_symbols
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/lib/check_symbols.sh ${CMAKE_NM} ${loom_lib_files})

# A program that sees only include/ (as C and as C++), linked against libloom.a and
# against libloom.so, opens the bundled model and uses a few modules. The static one
# links jansson's static archive where there is one: jansson defines utf8_encode and
# more, which once clashed with Loom's internal names.
set(loom_lib_static_deps "")
if(LOOM_JANSSON)
  find_library(LOOM_JANSSON_STATIC NAMES libjansson.a)
  if(LOOM_JANSSON_STATIC)
    list(APPEND loom_lib_static_deps ${LOOM_JANSSON_STATIC})
  else()
    list(APPEND loom_lib_static_deps ${LOOM_JANSSON})
  endif()
endif()
list(APPEND loom_lib_static_deps ${loom_lib_other_deps})
set(loom_consumer_cpp ${CMAKE_BINARY_DIR}/lib_consumer.cpp)
configure_file(${CMAKE_SOURCE_DIR}/tests/lib/consumer.c ${loom_consumer_cpp} COPYONLY)
foreach(t ${loom_lib_targets})
  string(REPLACE "loom_" "test_lib_" tname ${t})
  add_executable(${tname} ${CMAKE_SOURCE_DIR}/tests/lib/consumer.c)
  add_executable(${tname}_cpp ${loom_consumer_cpp})
  set_target_properties(${tname}_cpp PROPERTIES CXX_STANDARD 11 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
  foreach(x ${tname} ${tname}_cpp)
    if(t STREQUAL "loom_static")
      target_link_libraries(${x} PRIVATE loom_static ${loom_lib_static_deps})
    else()
      target_link_libraries(${x} PRIVATE loom_shared)
    endif()
    if(TARGET loom_template)
      target_compile_definitions(${x} PRIVATE LOOM_TEST_TEMPLATE=1)
    endif()
    add_test(NAME ${x} COMMAND ${x} ${CMAKE_SOURCE_DIR}/models/stories260K.gguf)
    set_tests_properties(${x} PROPERTIES TIMEOUT 300
                         ENVIRONMENT "LSAN_OPTIONS=suppressions=${CMAKE_SOURCE_DIR}/tests/lsan.supp:print_suppressions=0")
  endforeach()
endforeach()
