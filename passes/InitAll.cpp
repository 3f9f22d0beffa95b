//===- InitAll.cpp - register every MixPrec dialect and pass --------------===//
#include "mp/InitAll.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/Passes.h"

void mp::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mp::MPDialect, mp::culib::CuLibDialect,
                  mlir::func::FuncDialect>();
}

void mp::registerAllPasses() {
  mp::registerMPPasses();
  mlir::registerTransformsPasses();
}
