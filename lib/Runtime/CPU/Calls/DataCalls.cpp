//===- DataCalls.cpp - plan calls of this family on the CPU ---------------===//
#include "mp/Runtime/CPU/Calls.h"

namespace mp::rt::cpu {

void addDataCalls(CallTable &table) { (void)table; }

} // namespace mp::rt::cpu
