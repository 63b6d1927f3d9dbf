# End-to-end tests: programs compiled with mwcc, run as one process.
import os
import lit.formats

config.name = "midway-e2e"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".c", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = config.e2e_source_dir
config.test_exec_root = config.e2e_obj_dir

config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.midway_bin_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%mwcc", os.path.join(config.midway_bin_dir, "mwcc") + " -Wall -Werror"))
config.substitutions.append(("%mwrun", os.path.join(config.midway_bin_dir, "mwrun") + " --timeout 60"))
config.substitutions.append(("%inputs", config.e2e_source_dir))

# Vector widths the machine can run, for tests that compile vectorized loops.
try:
    with open("/proc/cpuinfo") as f:
        flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
except OSError:
    flags = []
for feature in ("avx2", "avx512f"):
    if feature in flags:
        config.available_features.add(feature)

config.substitutions.append(("%midway_lib", os.path.join(os.path.dirname(config.midway_bin_dir), "lib")))
config.substitutions.append(("%midway_include", os.path.join(os.path.dirname(config.midway_bin_dir), "include")))
