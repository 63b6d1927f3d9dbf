# Misuse and crash reports of release/processor consistency: programs compiled with
# mwcc, run alone or under mwrun, their messages checked with FileCheck.
import os
import lit.formats

config.name = "midway-rc-misuse"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".c"]
config.test_source_root = config.rc_source_dir
config.test_exec_root = config.rc_obj_dir

config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.midway_bin_dir, config.environment.get("PATH", "")])
# Cross-host runs are not what these check: every job is local.
config.environment.pop("MW_MODEL", None)
config.environment.pop("MW_PC_INTERVAL_US", None)
config.substitutions.append(("%mwcc", os.path.join(config.midway_bin_dir, "mwcc") + " -Wall -Werror"))
config.substitutions.append(("%mwrun", os.path.join(config.midway_bin_dir, "mwrun") + " --timeout 60"))
