//===- Backends.h - Output formats of the typed IR ---------------*- C++ -*-===//
//
// One backend = one function writing one format. Selected by `--emit=` (or,
// for the documentation, the `doc` command) in the driver.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_BACKENDS_BACKENDS_H
#define TPCC_BACKENDS_BACKENDS_H

#include "ir/TpcIR.h"
#include "support/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace tpcc {

/// The canonical JSON of the typed IR (`tpcc emit --emit=json`): every field
/// explicit, keys sorted, deterministic. Version field `tpcc_ir_version`: 1.
void emitJSON(const ir::Module &m, llvm::raw_ostream &os);

/// MCT's serialized target platform capabilities of platform `p`
/// (`tpcc emit --emit=mct-json`): one denormalized object, SCHEMA_VERSION 2.
/// The platform's declared memory, which the format has no field for, is a
/// warning to `diags` (when given).
void emitMctJSON(const ir::Platform &p, llvm::raw_ostream &os, DiagnosticEngine *diags = nullptr);

/// An AIMET quantsim config derived from capabilities `c` of module `m`
/// (`tpcc emit --emit=aimet`). Every concept AIMET cannot express is reported
/// to `diags` as a warning; with `comment`, the messages are also listed in a
/// top-level `comment` field (which AIMET's schema does not accept).
void emitAimet(const ir::Module &m, const ir::Capabilities &c, DiagnosticEngine &diags,
               llvm::raw_ostream &os, bool comment = false);

enum class DocFormat { Markdown, HTML };
/// A readable description of platform `p` (`tpcc doc`): header, default,
/// opsets with their options, fusing patterns, and the ONNX ops each opset
/// binds in every capabilities of `m` on `p`.
void emitDoc(const ir::Module &m, const ir::Platform &p, DocFormat format, llvm::raw_ostream &os);

namespace interop {
/// MCT's QuantizationMethod number: POWER_OF_TWO 0, LUT_POT_QUANTIZER 1,
/// SYMMETRIC 2, UNIFORM 3, LUT_SYM_QUANTIZER 4.
int mctMethod(ir::QuantMethod m);
/// "weights 8 MiB, activation 2.5 MB, total 1234567 B": the
/// memory a platform declares, for documents and messages.
std::string resourcesText(const ir::PlatformResources &r);
/// A number format a tool cannot hold: the format (ir::formatText), the
/// tensors it is given to ("activations", "`kernel` weights"), and how the
/// tool writes them instead.
struct LostFormat {
  std::string format, tensors, writtenAs;
};
/// Each number format other than plain integers that the configs of `o` give
/// a quantized tensor, once: a tool with integer quantizers only writes it as
/// integers of the same bits (`warn_interop_format`).
std::vector<LostFormat> lostFormats(const ir::Options &o);
/// MCT's Signedness number: AUTO 0, SIGNED 1, UNSIGNED 2.
int mctSignedness(ir::Signedness s);
/// MCT's key for weight slot `slot`: `kernel` -> "kernel_attr", `bias` ->
/// "bias_attr"; any other slot keeps its name.
std::string mctAttrKey(llvm::StringRef slot);

/// The ONNX op lists of AIMET supergroups for the fusing patterns of `p`:
/// each element of a pattern becomes every ONNX op bound (in `c`) to one of
/// its opsets, in binding order; the lists are the cartesian product of the
/// elements, patterns in order, duplicates dropped (first one kept). A
/// pattern with an element no op is bound to gives nothing.
std::vector<std::vector<std::string>> aimetSupergroups(const ir::Platform &p,
                                                       const ir::Capabilities &c);

/// The name MCT writes for opset `opset`: its own, except `Expand`, which MCT's
/// OperatorSetNames spells "Expend".
std::string mctSetName(llvm::StringRef opset);
/// Whether `name` is one of MCT 2.4.1's OperatorSetNames.
bool isMctSetName(llvm::StringRef name);
} // namespace interop

} // namespace tpcc

#endif
