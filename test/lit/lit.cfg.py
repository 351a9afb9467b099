# lit configuration for the tpcc binary's tests.
import os
import lit.formats

config.name = "tpcc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".tpc", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)

site = lit_config.params.get("tpcc_site_config") or os.environ.get("TPCC_LIT_SITE")
if not site:
    lit_config.fatal("run through ctest, or pass --param tpcc_site_config=BUILD/test/lit/lit.site.cfg.py")
exec(open(site).read())
config.test_exec_root = os.path.join(os.path.dirname(site), "out")
# The sanitizer build (`UNSUPPORTED: asan`: a long numerical test the release build runs).
if getattr(config, "tpcc_sanitize", "OFF").upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("asan")

config.environment["PATH"] = os.pathsep.join(
    [config.tpcc_bin_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "HOME", "ONEDNN_MAX_CPU_ISA",
            "DNNL_MAX_CPU_ISA", "OMP_NUM_THREADS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.substitutions.append(("%tpcc", os.path.join(config.tpcc_bin_dir, "tpcc")))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%srcroot", config.tpcc_src_dir))
config.substitutions.append(("%stdlib", os.path.join(config.tpcc_src_dir, "stdlib")))
config.substitutions.append(("%expect-exit", config.python + " " + os.path.join(config.tpcc_src_dir, "test", "tools", "expect_exit.py")))
config.substitutions.append(("%builddir", os.path.dirname(config.tpcc_bin_dir)))
config.substitutions.append(("%jsoncheck", config.python + " " + os.path.join(config.tpcc_src_dir, "test", "tools", "jsoncheck.py")))
# The shared models (../shared/models beside the repository; CI puts it there).
models = os.environ.get("TPCC_SHARED_MODELS") or os.path.normpath(
    os.path.join(config.tpcc_src_dir, "..", "shared", "models"))
config.substitutions.append(("%models", models))
# Debian's python3, which has the onnx package (test models are made with it).
config.substitutions.append(("%onnxpython", "/usr/bin/python3"))
