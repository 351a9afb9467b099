//===- Kernel.h - How operator kernels are written and registered -*- C++ -*-===//
//
// A kernel computes one ONNX node: it reads `ctx.inputs` (null for an omitted
// optional input), allocates and fills `ctx.outputs` (one per node output; an
// omitted optional output may be left undefined) and returns true, or returns
// `ctx.fail("...")` with a message that names what is wrong (the executor adds
// the node and the model). Kernels never throw and never abort on bad data.
//
// Kernels see the opset version the model imports for their domain
// (`ctx.opset`) and handle every version of their operator that libonnx 1.12
// knows. A kernel may keep state across runs of the same node (prepared
// weights, oneDNN primitives) in `ctx.state`.
//
// Registration is explicit: each ops file has a `register...` function that
// the registry calls (static initializers would be dropped by the linker).
// A run may look kernels up in a second registry first (ExecutionMode.h:
// ONNX Runtime's float arithmetic, runtime/ort/OrtKernels.h).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_KERNEL_H
#define TPCC_RUNTIME_KERNEL_H

#include "runtime/Tensor.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tpcc::rt {

/// Per-node state a kernel keeps between runs.
struct NodeState {
  virtual ~NodeState();
};

/// An operation the executor fused into the kernel before it (Conv -> Relu,
/// Conv -> Sigmoid * -> Mul, Conv -> Add): the kernel applies it to its
/// output, in order, as a oneDNN post-op.
struct PostOp {
  enum class Kind : uint8_t {
    Clip,      ///< min(max(x, a), b) (Relu: a 0, b +inf)
    LeakyRelu, ///< x >= 0 ? x : a * x
    Logistic,  ///< 1 / (1 + exp(-x))
    Tanh,
    Swish,     ///< x * logistic(x)
    HardSwish, ///< x * min(max(x / 6 + 1/2, 0), 1)
    Linear,    ///< a * x + b
    Add,       ///< x + the next of KernelContext::operands (same shape)
  };
  Kind kind = Kind::Clip;
  float a = 0, b = 0;
  bool operator==(const PostOp &o) const { return kind == o.kind && a == o.a && b == o.b; }
};

struct KernelContext {
  const graph::Node &node;
  int64_t opset;
  /// The model of the node (its opsets, its name), when the kernel runs in
  /// an executor; control-flow kernels load their subgraphs with it.
  const graph::Model *model = nullptr;
  std::vector<const Tensor *> inputs;
  std::vector<Tensor> outputs;
  std::unique_ptr<NodeState> &state;
  std::string error;
  /// For kernels that accept them (Conv, ConvTranspose): operations to apply
  /// to output 0, and the tensors their Adds read.
  llvm::ArrayRef<PostOp> post;
  /// For a fused kernel run in place of the head's (Fusion.h): its constants.
  llvm::ArrayRef<float> fusedParams;
  llvm::SmallVector<const Tensor *, 2> operands;
  /// Output 0 may stay in oneDNN's layout (only oneDNN kernels read it); the
  /// inputs of these kernels may arrive in one.
  bool blockedOutput = false;
  /// Bit i: input i is one of the executor's constants (an initializer or a
  /// value computed from them once): its buffer and contents never change.
  uint64_t constantInputs = 0;
  bool constantInput(size_t i) const { return i < 64 && (constantInputs >> i & 1); }

  KernelContext(const graph::Node &node, int64_t opset, std::unique_ptr<NodeState> &state)
      : node(node), opset(opset), state(state) {}

  bool fail(std::string msg) {
    error = std::move(msg);
    return false;
  }
  size_t numInputs() const { return inputs.size(); }
  /// Input `i`, or null when absent (omitted or past the end).
  const Tensor *input(size_t i) const {
    return i < inputs.size() && inputs[i] && inputs[i]->defined() ? inputs[i] : nullptr;
  }
  /// Whether the node asks for output `i`.
  bool wantsOutput(size_t i) const { return i < node.outputs.size() && node.outputs[i]; }

  // Attributes: the node's value, or `dflt` when the node lacks it (the
  // kernel passes the schema's default of the versions it handles). They go
  // through graph::NodeAttrs without a schema; the quantizer gives it one.
  bool hasAttr(llvm::StringRef n) const { return node.attr(n) != nullptr; }
  int64_t attrInt(llvm::StringRef n, int64_t dflt) const;
  float attrFloat(llvm::StringRef n, float dflt) const;
  std::string attrString(llvm::StringRef n, llvm::StringRef dflt) const;
  std::vector<int64_t> attrInts(llvm::StringRef n, std::vector<int64_t> dflt = {}) const;
  std::vector<float> attrFloats(llvm::StringRef n, std::vector<float> dflt = {}) const;
  /// A TENSOR attribute, or null.
  const graph::Tensor *attrTensor(llvm::StringRef n) const;
};

using KernelFn = bool (*)(KernelContext &);

class KernelRegistry {
public:
  /// The registry with every kernel of this build.
  static const KernelRegistry &get();

  /// Registers the kernel of `opType` in the default (ai.onnx) domain.
  void add(llvm::StringRef opType, KernelFn fn) { kernels[opType] = fn; }
  /// Registers the kernel of `opType` in another domain (`com.microsoft`).
  void add(llvm::StringRef domain, llvm::StringRef opType, KernelFn fn) {
    kernels[qualified(domain, opType)] = fn;
  }
  /// The kernel of an operator, or null.
  KernelFn find(llvm::StringRef domain, llvm::StringRef opType) const;
  /// Every registered operator, sorted (`domain.op` outside ai.onnx).
  std::vector<std::string> operators() const;

private:
  static std::string qualified(llvm::StringRef domain, llvm::StringRef opType) {
    return domain.empty() || domain == "ai.onnx" ? opType.str() : domain.str() + "." + opType.str();
  }
  llvm::StringMap<KernelFn> kernels;
};

// The ops files (runtime/ops/*.cpp).
void registerElementwiseKernels(KernelRegistry &r);
void registerActivationKernels(KernelRegistry &r);
void registerReduceKernels(KernelRegistry &r);
void registerQuantizeKernels(KernelRegistry &r);
void registerShapeKernels(KernelRegistry &r);
void registerDataMovementKernels(KernelRegistry &r);
void registerIndexingKernels(KernelRegistry &r);
void registerRecurrentKernels(KernelRegistry &r);
void registerControlFlowKernels(KernelRegistry &r);
void registerResizeKernels(KernelRegistry &r);
void registerConvKernels(KernelRegistry &r);
void registerGemmKernels(KernelRegistry &r);
void registerNBitsKernels(KernelRegistry &r);
void registerIntegerGemmKernels(KernelRegistry &r);
void registerPoolKernels(KernelRegistry &r);
void registerNormKernels(KernelRegistry &r);

} // namespace tpcc::rt

#endif
