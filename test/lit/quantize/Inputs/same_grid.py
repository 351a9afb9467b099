"""same_grid.py QDQ.onnx TABLE VALUE: prints the stored type and shape of constant
TABLE (behind its DequantizeLinear) and whether VALUE's QuantizeLinear uses the same
scale and zero point."""
import sys

import onnx
from onnx import numpy_helper

m = onnx.load(sys.argv[1])
table, value = sys.argv[2], sys.argv[3]
inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
dq = next(n for n in m.graph.node if n.op_type == "DequantizeLinear" and
          n.input[0] == table + "_quantized")
q = next(n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == value)
codes = inits[dq.input[0]]
same = all((inits[a] == inits[b]).all() for a, b in zip(dq.input[1:], q.input[1:]))
print(f"{table}: {codes.dtype} {list(codes.shape)}; {value}: "
      f"{'the same' if same else 'another'} scale and zero point")
