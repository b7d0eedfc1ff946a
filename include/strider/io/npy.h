#pragma once
// NumPy's .npy and .npz files.
//
// Reading: format versions 1.0, 2.0 and 3.0; every numeric dtype NumPy writes, in either byte
// order ('<', '>', '|'). Each becomes the strider dtype that holds its values exactly:
//   bool -> bool, uint8 -> uint8, float16/32/64 -> float16/32/64, int32 -> int32, int64 -> int64,
//   int8, int16, uint16 -> int32 (widened), uint32 -> int64 (widened),
//   uint64 -> int64 when every value fits (else an Error naming the value's index).
// Complex, string, object, datetime and structured dtypes are an Error naming the dtype.
// A Fortran-order array is returned with column-major strides (call .contiguous() for row-major
// memory); its logical shape and values are NumPy's.
//
// Memory: the file is read once into this process's memory, as np.load copies: the tensor never
// changes when the file is rewritten or truncated later, nor the file when the tensor is written.
// An array whose bytes are little-endian, aligned and already in a strider dtype (uint8, bool,
// int32, int64, float16/32/64) is a view of those bytes, not a second copy; others (byte-swapped,
// widened, deflated .npz entries) are decoded into fresh memory.
//
// Every failure is a strider::Error naming the file (and the .npz entry): a bad magic or version,
// a header longer than the file, a malformed header dict, a shape whose element or byte count
// overflows, data shorter or longer than the shape needs, a corrupt or truncated zip archive.
#include <map>
#include <string>

#include "strider/core/tensor.h"

namespace strider::io {

Tensor load_npy(const std::string& path);

// The arrays of an .npz archive (numpy.savez / savez_compressed) by name, without the ".npy"
// suffix (NumPy's keys). The archive is read once and each array copied out of it (keeping one
// array does not keep the archive in memory); deflated entries are inflated
// (zlib) and checked against their CRC-32. Zip64 archives are read.
std::map<std::string, Tensor> load_npz(const std::string& path);

// Writes `t` (any layout; written row-major) as a version 1.0 .npy file (2.0 when the header
// needs it), atomically (a temporary renamed into place). bfloat16 has no NumPy dtype: an Error
// (convert with .to(kFloat) first).
void save_npy(const std::string& path, const Tensor& t);

}  // namespace strider::io
