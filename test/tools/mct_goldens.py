#!/usr/bin/env python3
"""Writes the MCT goldens of test/lit/interop/mct-golden.test: the JSON that Sony MCT
2.4.1's own code serializes its shipped TPCs to (TargetPlatformCapabilities.
model_dump_json()), for comparison with `tpcc emit --emit=mct-json`.

It runs MCT's TPC sources themselves, not a copy: give it a checkout of
sony/model_optimization at tag v2.4.1 and, for IMX500 v4, Sony's edge-mdt-tpc
`edgemdt_tpc/data/imx500/tpc_v4_0.py`. Only MCT's three outside imports are
stubbed (mct_quantizers' QuantizationMethod numbers, the Logger, FLOAT_BITWIDTH);
everything else (schema v1/v2, the tpc_models, the v1 -> v2 conversion) is MCT's.
Needs pydantic 2 (not in Debian 12, so not run by the test suite; the goldens are
checked in).

usage: mct_goldens.py --mct MCT_CHECKOUT [--edgemdt TPC_V4_0_PY] --out DIR
"""
import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile

STUBS = {
    "mct_quantizers/__init__.py": (
        "from enum import Enum\n"
        "class QuantizationMethod(Enum):\n"
        "    POWER_OF_TWO = 0\n    LUT_POT_QUANTIZER = 1\n    SYMMETRIC = 2\n"
        "    UNIFORM = 3\n    LUT_SYM_QUANTIZER = 4\n"),
    "model_compression_toolkit/__init__.py": "",
    "model_compression_toolkit/logger.py": (
        "class Logger:\n"
        "    @staticmethod\n    def critical(m): raise RuntimeError(m)\n"
        "    @staticmethod\n    def warning(m): print('warning:', m, file=__import__('sys').stderr)\n"
        "    @staticmethod\n    def info(m): pass\n"),
    "model_compression_toolkit/constants.py": "FLOAT_BITWIDTH = 32\n",
}

TPCS = {  # golden name -> MCT module
    "imx500": "model_compression_toolkit.target_platform_capabilities.tpc_models.imx500_tpc.v1.tpc",
    "tflite": "model_compression_toolkit.target_platform_capabilities.tpc_models.tflite_tpc.v1.tpc",
    "qnnpack": "model_compression_toolkit.target_platform_capabilities.tpc_models.qnnpack_tpc.v1.tpc",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mct", required=True)
    ap.add_argument("--edgemdt")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    root = tempfile.mkdtemp()
    try:
        for path, text in STUBS.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        tpc_dir = "model_compression_toolkit/target_platform_capabilities"
        dst = os.path.join(root, tpc_dir)
        os.makedirs(dst, exist_ok=True)
        open(os.path.join(dst, "__init__.py"), "w").close()
        shutil.copy(os.path.join(a.mct, tpc_dir, "constants.py"), dst)
        for sub in ("schema", "tpc_models"):
            shutil.copytree(os.path.join(a.mct, tpc_dir, sub), os.path.join(dst, sub),
                            ignore=shutil.ignore_patterns("get_target_platform_capabilities.py"))
        # tpc_models/__init__.py imports the framework attach code; the TPCs need none.
        for dirpath, _, files in os.walk(os.path.join(dst, "tpc_models")):
            for f in files:
                if f == "__init__.py":
                    open(os.path.join(dirpath, f), "w").close()
        sys.path.insert(0, root)
        os.makedirs(a.out, exist_ok=True)

        def write(name, tpc):
            with open(os.path.join(a.out, name + ".mct.json"), "w") as f:
                json.dump(json.loads(tpc.model_dump_json()), f, indent=1, sort_keys=True)
                f.write("\n")
            print("wrote", os.path.join(a.out, name + ".mct.json"))

        for name, module in TPCS.items():
            write(name, importlib.import_module(module).get_tpc())
        if a.edgemdt:
            # A schema-v1 TPC, as MCT 2.4.1 reads it: converted to schema v2.
            spec = importlib.util.spec_from_file_location("tpc_v4_0", a.edgemdt)
            v4 = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(v4)
            compat = importlib.import_module(
                "model_compression_toolkit.target_platform_capabilities.schema.schema_compatability")
            write("imx500_v4", compat._schema_v1_to_v2(v4.get_tp_model()))
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
