# Precompiled headers: the standard and third-party headers that most of the
# project's files include, parsed once per target instead of once per file.
# On a clean build of libcore's files this saves about a quarter of the
# compiler's time (-O2 -g, g++ 12), which is what a fresh CI machine pays four
# times over (the build, two sanitizer builds, the fuzz build).
#
# With a compiler launcher (ccache) they are off by default: ccache caches a
# file compiled against a precompiled header only under relaxed settings,
# and a warm ccache saves more than they do. Files must still include what
# they use: a build without them (-DDMLPS_PCH=OFF, or any ccache build)
# catches a missing #include.
if(CMAKE_CXX_COMPILER_LAUNCHER)
  set(_dmlps_pch_default OFF)
else()
  set(_dmlps_pch_default ON)
endif()
option(DMLPS_PCH "Precompile the common headers (default: on unless a compiler launcher is set)"
       ${_dmlps_pch_default})

set(DMLPS_PCH_HEADERS
    <algorithm> <atomic> <chrono> <cmath> <cstdint> <cstring> <deque> <filesystem>
    <functional> <map> <memory> <optional> <random> <span> <string> <string_view>
    <thread> <utility> <variant> <vector>
    <fmt/format.h> <spdlog/spdlog.h> <Eigen/Core> <zmq.hpp> <msgpack.hpp>)

# dmlps_precompile(TARGET): gives TARGET, whose sources are all C++, the
# common precompiled headers, if DMLPS_PCH is on.
function(dmlps_precompile target)
  if(DMLPS_PCH)
    target_precompile_headers(${target} PRIVATE ${DMLPS_PCH_HEADERS})
  endif()
endfunction()

# Unity builds: the library's files (and the unit tests', and those of a
# tool of more than two files) compiled eight to a translation unit,
# so that the headers the precompiled ones leave (the project's own, the
# rest of the standard library's) are parsed once per eight files. On top
# of the precompiled headers this takes about a third off a clean build of
# the library (see the commit that brought it), which a fresh CI machine
# pays three times over (the build, then the two sanitizer builds). An edit
# to one file recompiles its seven neighbours: -DDMLPS_UNITY=OFF for a
# build edited file by file. Files must not share names of their own at
# namespace scope, anonymous namespaces included: a build with it on
# catches a clash within a batch, and -DDMLPS_UNITY_BATCH=0 (each target
# one unit) one between any two files, before adding a file moves the
# batches' borders onto it.
option(DMLPS_UNITY "Compile the library, the unit tests and dmlps-bench in unity batches" ON)
set(DMLPS_UNITY_BATCH 8 CACHE STRING "Files to a unity batch (0: a target's files in one)")

# dmlps_unity(TARGET): unity-builds TARGET if DMLPS_UNITY is on.
function(dmlps_unity target)
  if(DMLPS_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${DMLPS_UNITY_BATCH})
  endif()
endfunction()
