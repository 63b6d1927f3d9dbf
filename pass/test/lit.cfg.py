# lit configuration for the Midway pass tests. Run from the build tree
# (build/pass/test), where lit.site.cfg.py says which plugin and tools to use.
import os

import lit.formats

config.name = "Midway pass"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ll", ".c"]
config.test_source_root = os.path.dirname(__file__)

# FileCheck, not and count come from LLVM 19, never from whatever is first in PATH.
config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])

opt = os.path.join(config.llvm_tools_dir, "opt")
config.substitutions.append(("%plugin", config.midway_plugin))
config.substitutions.append(
    ("%opt", "%s -load-pass-plugin=%s" % (opt, config.midway_plugin)))
config.substitutions.append(
    ("%clang_mw", "%s -fpass-plugin=%s -I%s"
     % (config.midway_clang, config.midway_plugin, config.midway_annotations_dir)))
