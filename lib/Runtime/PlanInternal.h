//===- PlanInternal.h - helpers shared by Plan.cpp and PlanIO.cpp -*- C++ -*-===//
#ifndef MP_RUNTIME_PLANINTERNAL_H
#define MP_RUNTIME_PLANINTERNAL_H

#include "mp/Runtime/Plan.h"

#include <memory>
#include <string>
#include <string_view>

namespace mp::rt::plan_detail {

/// 'text' in single quotes, control characters and '\' as \xNN.
std::string quoted(std::string_view s);
/// `s` itself when it is plain, else quoted(s).
std::string quotedIfOdd(std::string_view s);
/// "[1, 3, 224, 224]".
std::string shapeString(const Shape &shape);
/// "f16", or "dtype code 99" for codes the runtime does not know.
std::string dtypeString(DType t);
/// "f16 [1, 3]".
std::string typeString(DType t, const Shape &shape);
/// Checks that `t` is known and `shape` static, and computes the number of
/// elements and bytes without overflow; else false, with the reason in `why`.
bool checkType(DType t, const Shape &shape, int64_t &elements, uint64_t &bytes,
               std::string &why);
/// "plan format version X.Y, this runtime reads 1.x (...)".
std::string versionMismatchMessage(uint32_t major, uint32_t minor);
/// `size` bytes (at least 1), aligned to kPlanWeightAlignment; throws
/// std::bad_alloc.
std::shared_ptr<void> allocateAligned(size_t size);
/// The machine's physical memory in bytes (0 when unknown): the limit on
/// what a plan may make the runtime allocate.
uint64_t physicalMemoryBytes();

} // namespace mp::rt::plan_detail

#endif // MP_RUNTIME_PLANINTERNAL_H
