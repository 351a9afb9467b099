//===- Lapack.cpp - The LAPACK routines second-order rounding calls ------===//
#include "quant/learn/gptq/Lapack.h"

#include <dlfcn.h>

#include <climits>
#include <cstdlib>
#include <mutex>

using namespace tpcc::quant;

namespace {

// LAPACK's Fortran entry points (a character argument's length follows the
// arguments, as gfortran passes it).
using Potrf = void (*)(const char *, const int *, double *, const int *, int *, size_t);
using Posv = void (*)(const char *, const int *, const int *, double *, const int *, double *,
                      const int *, int *, size_t);

struct Library {
  Potrf potrf = nullptr, potri = nullptr;
  Posv posv = nullptr;
  std::string error, description = "reference LAPACK";
};

bool cpuHasAvx2Fma() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

/// OpenBLAS with kernels for every CPU (Debian's) chose them when it
/// loaded (CBC links it too, so it is loaded at start): it chooses again,
/// with OPENBLAS_CORETYPE=Haswell, unless the user set a core type; and runs
/// on one thread (a pthread build's own threads).
void fixOpenBlasKernels(void *h, std::string &description) {
  using Fn = void (*)();
  auto quit = reinterpret_cast<Fn>(dlsym(h, "gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<Fn>(dlsym(h, "gotoblas_dynamic_init"));
  if (quit && init && cpuHasAvx2Fma() && !getenv("OPENBLAS_CORETYPE")) {
    setenv("OPENBLAS_CORETYPE", "Haswell", /*overwrite=*/1);
    quit();
    init();
  }
  if (auto threads = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads")))
    threads(1);
  using Text = char *(*)();
  auto config = reinterpret_cast<Text>(dlsym(h, "openblas_get_config"));
  auto core = reinterpret_cast<Text>(dlsym(h, "openblas_get_corename"));
  if (config && core) {
    // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen SINGLE_THREADED": the version.
    std::string c = config();
    size_t end = c.find(' ', c.find(' ') + 1);
    description = c.substr(0, end) + ", " + core() + " kernels";
  }
}

const Library &library() {
  static Library lib;
  static std::once_flag once;
  std::call_once(once, [] {
    void *h = dlopen("liblapack.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char *e = dlerror();
      lib.error = std::string("cannot load LAPACK (liblapack.so.3): ") + (e ? e : "");
      return;
    }
    fixOpenBlasKernels(h, lib.description);
    lib.potrf = reinterpret_cast<Potrf>(dlsym(h, "dpotrf_"));
    lib.potri = reinterpret_cast<Potrf>(dlsym(h, "dpotri_"));
    lib.posv = reinterpret_cast<Posv>(dlsym(h, "dposv_"));
    if (!lib.potrf || !lib.potri || !lib.posv)
      lib.error = "liblapack.so.3 lacks dpotrf_, dpotri_ or dposv_";
  });
  return lib;
}

bool fits(int64_t n) { return n >= 0 && n <= INT_MAX; }

/// Runs dpotrf_ or dpotri_ (`fn`) on the `n` x `n` row-major `a`. A
/// row-major matrix is its column-major transpose: its upper triangle is the
/// column-major lower one ('L').
bool onUpperTriangle(Potrf Library::*fn, double *a, int64_t n) {
  const Library &lib = library();
  if (!lib.error.empty() || !fits(n))
    return false;
  int m = int(n), info = 0;
  (lib.*fn)("L", &m, a, &m, &info, 1);
  return info == 0;
}

} // namespace

const std::string &lapack::loadError() { return library().error; }

std::string lapack::describe() {
  const Library &lib = library();
  return lib.error.empty() ? lib.description : lib.error;
}

bool lapack::choleskyUpper(double *a, int64_t n) { return onUpperTriangle(&Library::potrf, a, n); }

bool lapack::inverseFromCholesky(double *a, int64_t n) {
  return onUpperTriangle(&Library::potri, a, n);
}

bool lapack::solvePositive(double *a, double *b, int64_t n) {
  const Library &lib = library();
  if (!lib.error.empty() || !fits(n))
    return false;
  int m = int(n), one = 1, info = 0;
  lib.posv("L", &m, &one, a, &m, b, &m, &info, 1);
  return info == 0;
}
