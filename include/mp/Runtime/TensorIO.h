//===- TensorIO.h - tensors from/to .npy and TensorProto files -*- C++ -*-===//
//
// NumPy .npy files
//   Reading: format versions 1.0, 2.0 and 3.0; little-endian ('<') or
//   byte-order-less ('|') descriptors; C order only (fortran_order True is an
//   error); dtypes <f2 <f4 <f8 <i1/|i1 <i2 <i4 <i8 |u1/<u1 <u2 <u4 <u8 |b1
//   (also '?'). Big-endian ('>') data, structured dtypes, object arrays and
//   every other dtype are errors. Bytes of a bool array other than 0 and 1
//   read as 1.
//   Writing: version 1.0 (2.0 when the header needs it), header padded so the
//   data starts at a multiple of 64 bytes, as numpy.save writes it.
//   bfloat16 is not a NumPy type: writing a BF16 tensor is an error (write
//   its bits as a U16 view, or convert to f32); no .npy file reads as BF16.
//
// ONNX TensorProto (.pb) files, as in ONNX's backend test data
//   Reading: dims, data_type, name, and the data from raw_data (little-endian)
//   or from the typed field ONNX uses for the type: float_data (FLOAT),
//   int32_data (INT32, INT16, INT8, UINT16, UINT8, BOOL, and FLOAT16 and
//   BFLOAT16 as their bit patterns), int64_data (INT64), double_data
//   (DOUBLE), uint64_data (UINT32, UINT64). The element count of the data
//   must match dims exactly; typed values outside the range of the type are
//   errors. External data, segments, strings, complex, float8 and int4 types
//   are errors. Writing: dims, data_type, name and raw_data.
//   TensorProto support needs the library built with ONNX
//   (MP_RUNTIME_WITH_ONNX); without it these functions return an error
//   saying so (hasTensorProtoSupport() tells which).
//
// Errors: every malformed input gives an error Status whose message starts
// with the file's path; nothing is allocated for the data before the file is
// known to hold it, so a lying header cannot cause a huge allocation.
// Only little-endian hosts are supported.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_TENSORIO_H
#define MP_RUNTIME_TENSORIO_H

#include "mp/Runtime/Status.h"
#include "mp/Runtime/Tensor.h"

#include <string>

namespace mp::rt {

/// A tensor with the name its file gave it (empty when none).
struct NamedTensor {
  std::string name;
  HostTensor tensor;
};

/// Reads a NumPy .npy file.
Result<HostTensor> readNpy(const std::string &path);
/// Writes `tensor` as a NumPy .npy file (an error for BF16).
Status writeNpy(const std::string &path, const TensorView &tensor);

/// Whether the library was built with ONNX TensorProto support.
bool hasTensorProtoSupport();
/// Reads a serialized onnx.TensorProto, with its name.
Result<NamedTensor> readTensorProto(const std::string &path);
/// Writes `tensor` as a serialized onnx.TensorProto (data in raw_data).
Status writeTensorProto(const std::string &path, const TensorView &tensor,
                        const std::string &name = "");

/// Reads a .npy or a TensorProto file: by the extension (".npy"; ".pb" or
/// ".tensorproto"), otherwise by the content (the NumPy magic string, else a
/// TensorProto).
Result<HostTensor> readTensorFile(const std::string &path);

} // namespace mp::rt

#endif // MP_RUNTIME_TENSORIO_H
