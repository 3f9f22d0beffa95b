//===- MPBase.td - base classes and type constraints of mp ops -*- tablegen -*-===//
#ifndef MP_DIALECT_MP_MPBASE_TD
#define MP_DIALECT_MP_MPBASE_TD

include "mp/Dialect/MP/MPDialect.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints. Every constraint also accepts `!mp.unknown`, the type of
// values whose type the model does not give (outputs of custom-domain ops).
//===----------------------------------------------------------------------===//

def MP_Tensor : AnyTypeOf<[AnyTensor, MP_UnknownType], "tensor">;
def MP_FloatTensor : AnyTypeOf<[TensorOf<[AnyFloat]>, MP_UnknownType],
                               "floating-point tensor">;
def MP_IntTensor : AnyTypeOf<[TensorOf<[AnyInteger]>, MP_UnknownType],
                             "integer tensor">;
def MP_I64Tensor : AnyTypeOf<[TensorOf<[I64]>, MP_UnknownType], "i64 tensor">;
def MP_BoolTensor : AnyTypeOf<[TensorOf<[I1]>, MP_UnknownType], "bool tensor">;
def MP_NumericTensor : AnyTypeOf<[TensorOf<[AnyFloat, AnyInteger, AnyComplex]>,
                                  MP_UnknownType], "numeric tensor">;
def MP_AnyValue : AnyTypeOf<[AnyTensor, MP_UnknownType, MP_SequenceType,
                             MP_OptionalType], "ONNX value">;

// Optional inputs: a missing input is a value of type `none` (see mp.none).
def MP_OptTensor : AnyTypeOf<[AnyTensor, MP_UnknownType, NoneType],
                             "tensor or none">;
def MP_OptFloatTensor : AnyTypeOf<[TensorOf<[AnyFloat]>, MP_UnknownType,
                                   NoneType], "floating-point tensor or none">;
def MP_OptIntTensor : AnyTypeOf<[TensorOf<[AnyInteger]>, MP_UnknownType,
                                 NoneType], "integer tensor or none">;
def MP_OptI64Tensor : AnyTypeOf<[TensorOf<[I64]>, MP_UnknownType, NoneType],
                                "i64 tensor or none">;

//===----------------------------------------------------------------------===//
// Attribute shorthands (ONNX attribute types).
//===----------------------------------------------------------------------===//

defvar MP_Int = I64Attr;
defvar MP_Float = F32Attr;
defvar MP_Ints = DenseI64ArrayAttr;
defvar MP_Floats = DenseF32ArrayAttr;
defvar MP_Str = StrAttr;
defvar MP_Strs = StrArrayAttr;
defvar MP_TensorAttr = ElementsAttr;

defvar MP_OptInt = OptionalAttr<I64Attr>;
defvar MP_OptFloat = OptionalAttr<F32Attr>;
defvar MP_OptInts = OptionalAttr<DenseI64ArrayAttr>;
defvar MP_OptFloats = OptionalAttr<DenseF32ArrayAttr>;
defvar MP_OptStr = OptionalAttr<StrAttr>;
defvar MP_OptStrs = OptionalAttr<StrArrayAttr>;
defvar MP_OptTensorAttr = OptionalAttr<ElementsAttr>;

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

class MP_Op<string mnemonic, list<Trait> traits = []>
    : Op<MP_Dialect, mnemonic, traits>;

// A typed ONNX operator of the default domain.
//   onnxType       the ONNX op_type;
//   since          the first ONNX schema version whose form the op represents:
//                  nodes whose schema is at least this version import as this
//                  op, older ones as the generic mp.onnx_op;
//   shapeFunction  the function in mp::shape that infers the result types from
//                  operand types, attributes and constant operands, or "" for
//                  ops whose result count is not known from those (Split);
//   numInputs / numOutputs  the ONNX input/output count, -1 when variadic.
class MP_OnnxOp<string mnemonic, string onnxType, int since,
                string shapeFunction, int numInputs, int numOutputs,
                list<Trait> traits = []>
    : MP_Op<mnemonic, !listconcat(traits, [Pure],
          !if(!empty(shapeFunction), [],
              [DeclareOpInterfaceMethods<InferTypeOpInterface>]))> {
  string onnxOpType = onnxType;
  int onnxSinceVersion = since;
  // More of the op's own declarations, after the ONNX constants.
  code extraOnnxDeclarations = "";

  let summary = "ONNX " # onnxType;
  let description = "The ONNX `" # onnxType # "` operator (schema version " #
    since # " and later), see https://onnx.ai/onnx/operators/onnx__" #
    onnxType # ".html. Operands and attributes keep their ONNX names.";

  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";

  let extraClassDeclaration = [{
    static constexpr ::llvm::StringLiteral kOnnxOpType = "}] # onnxType # [{";
    static constexpr int64_t kOnnxSinceVersion = }] # since # [{;
    static constexpr int kOnnxNumInputs = }] # numInputs # [{;
    static constexpr int kOnnxNumOutputs = }] # numOutputs # [{;
  }] # !if(!empty(shapeFunction), "", [{
    /// Declared types may refine the inferred ones (`?` to a static dim).
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                        ::mlir::TypeRange actual);
  }]) # extraOnnxDeclarations;

  let extraClassDefinition = !if(!empty(shapeFunction), "", [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, ::std::optional<::mlir::Location> location,
        ::mlir::ValueRange operands, ::mlir::DictionaryAttr attributes,
        ::mlir::OpaqueProperties properties, ::mlir::RegionRange regions,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes) {
      ::mp::ShapeContext shapeContext(
          context, location, operands, attributes,
          ::mp::detail::makeInherentAttrLookup<$cppClass>(context, properties),
          kOnnxOpType);
      return ::mp::shape::}] # shapeFunction # [{(shapeContext, inferredReturnTypes);
    }
    bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                            ::mlir::TypeRange actual) {
      return ::mp::areCompatibleTypeLists(inferred, actual);
    }
  }]);
}

#endif // MP_DIALECT_MP_MPBASE_TD
