//===- MPDialect.td - the mp dialect and its types ---------*- tablegen -*-===//
#ifndef MP_DIALECT_MP_MPDIALECT_TD
#define MP_DIALECT_MP_MPDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def MP_Dialect : Dialect {
  let name = "mp";
  let cppNamespace = "::mp";
  let summary = "ONNX operators as typed MLIR ops, the input of the mixed-precision passes";
  let description = [{
    The `mp` dialect represents an ONNX model as a tensor graph: one
    `func.func` per ONNX graph, one op per ONNX node. ONNX operators that the
    project understands have typed ops with verifiers and result-type
    inference; any other node is carried losslessly by `mp.onnx_op`.

    Conventions shared by every op:
    * every ONNX input is an operand, in ONNX order; a missing optional input is
      a value of type `none` produced by `mp.none`;
    * every ONNX output is a result, in ONNX order; the discardable attribute
      `mp.outputs` keeps the ONNX value names (an empty name marks an output
      the node did not produce);
    * ONNX attributes keep their ONNX names: INT as `i64`, FLOAT as `f32`,
      STRING as a string, INTS / FLOATS as `array<i64: ...>` / `array<f32: ...>`,
      STRINGS as an array of strings, TENSOR as a dense elements attribute;
    * the location of an op is `loc("<ONNX node name>")`.
  }];
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerTypes();

    /// The typed op that represents ONNX operator `opType` in the default
    /// domain when the node's schema has version `sinceVersion`, if any.
    std::optional<::mlir::RegisteredOperationName>
    lookupTypedOp(::llvm::StringRef opType, int64_t sinceVersion) const;

    /// All typed ops, keyed by ONNX op type.
    const ::llvm::StringMap<struct OnnxOpInfo> &getOnnxOpTable() const {
      return onnxOps;
    }

    // Names of the discardable attributes the dialect defines.
    static constexpr ::llvm::StringLiteral kOutputNamesAttr = "mp.outputs";
    static constexpr ::llvm::StringLiteral kArgNameAttr = "mp.name";
    static constexpr ::llvm::StringLiteral kDocStringAttr = "mp.doc_string";
    /// On training-mode BatchNormalization and mp.batch_norm_grad of a
    /// data-parallel step (mp-training): statistics of the global batch.
    static constexpr ::llvm::StringLiteral kSyncRanksAttr = "mp.sync_ranks";

  private:
    ::llvm::StringMap<struct OnnxOpInfo> onnxOps;
    template <typename... OpTys> void registerOnnxOps();
  }];
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

class MP_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<MP_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def MP_StringType : MP_Type<"String", "string"> {
  let summary = "ONNX STRING element type";
}

def MP_UnknownType : MP_Type<"Unknown", "unknown"> {
  let summary = "a value whose type neither the model nor shape inference gives";
  let description = [{
    ONNX allows values whose type is not declared and cannot be inferred, e.g.
    the outputs of a custom-domain op. Such values have type `!mp.unknown`.
  }];
}

def MP_SequenceType : MP_Type<"Sequence", "seq"> {
  let summary = "ONNX sequence type";
  let parameters = (ins "::mlir::Type":$elementType);
  let assemblyFormat = "`<` $elementType `>`";
}

def MP_OptionalType : MP_Type<"Optional", "opt"> {
  let summary = "ONNX optional type";
  let parameters = (ins "::mlir::Type":$elementType);
  let assemblyFormat = "`<` $elementType `>`";
}

#endif // MP_DIALECT_MP_MPDIALECT_TD
