// cxxopts, as every dmlps binary includes it. A flag of many values is
// split at CXXOPTS_VECTOR_DELIMITER, ',' unless told otherwise; the
// binaries' positional file lists (dmlps-trace, dmlps-predict,
// dmlps-keygen, dmlps-bench advise) are such flags, and a path with a
// comma in it came apart into two files that do not exist. Here it is the
// NUL byte, which no argument holds; the lists given as one flag
// (--policies, --candidates) are split by the code that reads them.
#ifndef DMLPS_CLI_CXXOPTS_H_
#define DMLPS_CLI_CXXOPTS_H_

#ifdef CXXOPTS_VECTOR_DELIMITER
#error "include dmlps/cli/cxxopts.h, not <cxxopts.hpp>, before any other that includes it"
#endif
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>

#endif  // DMLPS_CLI_CXXOPTS_H_
