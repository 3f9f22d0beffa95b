//===- ElementwiseCalls.cpp - plan calls of this family on the CPU ---------------===//
#include "mp/Runtime/CPU/Calls.h"

namespace mp::rt::cpu {

void addElementwiseCalls(CallTable &table) { (void)table; }

} // namespace mp::rt::cpu
