//===- CuLibDialect.cpp - the culib dialect ------------------------------===//
#include "mp/Dialect/CuLib/CuLibDialect.h"

using namespace mlir;
using namespace mp::culib;

#include "mp/Dialect/CuLib/CuLibOpsDialect.cpp.inc"

void CuLibDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "mp/Dialect/CuLib/CuLibOps.cpp.inc"
      >();
}
