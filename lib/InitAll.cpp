//===- InitAll.cpp - register every MixPrec dialect and pass --------------===//
#include "mp/InitAll.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Dialect/MP/GradientOpInterface.h"
#include "mp/Dialect/MP/MPDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Transforms/Passes.h"

void mp::registerAllDialects(mlir::DialectRegistry &registry) {
  registry
      .insert<mp::MPDialect, mp::culib::CuLibDialect, mlir::func::FuncDialect,
              mlir::ml_program::MLProgramDialect>();
  mp::registerGradientModels(registry);
}

void mp::registerAllPasses() {
  mp::registerMPPasses();
  mp::registerConversionPasses();
  mp::registerCuLibPasses();
  mlir::registerTransformsPasses();
  mp::registerPipelines();
}
