//===- PlanBuilding.h - appending buffers to a Plan in code ---*- C++ -*-===//
//
// Small helpers for code that builds plans by hand (the runtime's unit tests,
// mp-make-test-plans): append an arena buffer at the end of the arena, or an
// f32 weight with the buffer that reads it. Header-only.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_PLANBUILDING_H
#define MP_RUNTIME_PLANBUILDING_H

#include "mp/Runtime/Plan.h"

#include <string>
#include <utility>
#include <vector>

namespace mp::rt {

/// Appends an Arena buffer at the end of the arena (plan.arenaSize), which
/// grows by its bytes rounded up to a multiple of 256; returns its id.
inline uint32_t appendArenaBuffer(Plan &plan, DType dtype, Shape shape,
                                  std::string name) {
  PlanBuffer b;
  b.id = static_cast<uint32_t>(plan.buffers.size());
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.storage = BufferStorage::Arena;
  b.offset = plan.arenaSize;
  b.name = std::move(name);
  plan.arenaSize += (b.byteCount() + 255) / 256 * 256;
  plan.buffers.push_back(b);
  return b.id;
}

/// Appends the f32 weight `weightName` with `values` and a buffer named
/// `bufferName` of `storage` (Weight or State) whose weight it is; returns
/// the buffer's id.
inline uint32_t appendWeightBuffer(Plan &plan, BufferStorage storage,
                                   const std::string &weightName,
                                   std::string bufferName, Shape shape,
                                   const std::vector<float> &values) {
  plan.weights.push_back(PlanWeight::copyOf(weightName, DType::F32, shape,
                                            values.data(),
                                            values.size() * sizeof(float)));
  PlanBuffer b;
  b.id = static_cast<uint32_t>(plan.buffers.size());
  b.dtype = DType::F32;
  b.shape = std::move(shape);
  b.storage = storage;
  b.weight = static_cast<uint32_t>(plan.weights.size() - 1);
  b.name = std::move(bufferName);
  plan.buffers.push_back(b);
  return b.id;
}

} // namespace mp::rt

#endif // MP_RUNTIME_PLANBUILDING_H
