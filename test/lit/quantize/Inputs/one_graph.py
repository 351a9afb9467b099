"""save(): the model of one graph, float input x and output y, opset 13, IR 8, checked
and written (the shared end of the make_*.py scripts here)."""
import onnx
from onnx import TensorProto, helper


def save(path, name, nodes, x_shape, y_shape, inits):
    graph = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
