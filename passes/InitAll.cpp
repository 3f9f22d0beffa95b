//===- InitAll.cpp - register every MixPrec dialect and pass --------------===//
#include "mp/InitAll.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

void mp::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mp::MPDialect, mp::culib::CuLibDialect,
                  mlir::func::FuncDialect>();
}

void mp::buildCompilePipeline(mlir::OpPassManager &pm) {
  pm.addNestedPass<mlir::func::FuncOp>(mp::createInferShapes());
  pm.addNestedPass<mlir::func::FuncOp>(mp::createFoldConstants());
  pm.addPass(mp::createConvertMPToCuLib());
  pm.addNestedPass<mlir::func::FuncOp>(mp::createPlanMemory());
}

void mp::registerAllPasses() {
  mp::registerMPPasses();
  mlir::registerTransformsPasses();
  mlir::PassPipelineRegistration<>(
      "mp-compile",
      "Lower an imported model to memory-planned culib calls: "
      "mp-infer-shapes, mp-fold-constants, convert-mp-to-culib, "
      "culib-plan-memory",
      [](mlir::OpPassManager &pm) { buildCompilePipeline(pm); });
}
