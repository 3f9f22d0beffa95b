//===- DynamicShapes.cpp - plans that take a range of input shapes --------===//
//
// See mp/Runtime/DynamicShapes.h.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/DynamicShapes.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace mp::rt {

//===----------------------------------------------------------------------===//
// Polynomials
//===----------------------------------------------------------------------===//

std::optional<int64_t>
PlanPolynomial::evaluate(const std::vector<int64_t> &values) const {
  int64_t sum = 0;
  for (const Term &t : terms) {
    if (t.powers.size() != values.size())
      return std::nullopt;
    int64_t product = t.coefficient;
    for (size_t s = 0; s < values.size(); ++s)
      for (uint8_t p = 0; p < t.powers[s]; ++p)
        if (__builtin_mul_overflow(product, values[s], &product))
          return std::nullopt;
    if (__builtin_add_overflow(sum, product, &sum))
      return std::nullopt;
  }
  return sum;
}

std::string PlanPolynomial::str(const std::vector<PlanSymbol> &symbols) const {
  if (terms.empty())
    return "0";
  std::string out;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Term &t = terms[i];
    int64_t c = t.coefficient;
    if (i > 0) {
      out += c < 0 ? " - " : " + ";
      c = c < 0 ? -c : c;
    }
    std::string monomial;
    for (size_t s = 0; s < t.powers.size(); ++s)
      for (uint8_t p = 0; p < t.powers[s]; ++p)
        monomial +=
            (monomial.empty() ? "" : "*") +
            (s < symbols.size() ? symbols[s].name : "s" + std::to_string(s));
    if (monomial.empty())
      out += std::to_string(c);
    else if (c == 1)
      out += monomial;
    else if (c == -1)
      out += "-" + monomial;
    else
      out += std::to_string(c) + "*" + monomial;
  }
  return out;
}

int PlanPolynomial::symbolIndex() const {
  if (terms.size() != 1 || terms[0].coefficient != 1)
    return -1;
  int index = -1;
  for (size_t s = 0; s < terms[0].powers.size(); ++s) {
    if (terms[0].powers[s] == 0)
      continue;
    if (terms[0].powers[s] != 1 || index >= 0)
      return -1;
    index = static_cast<int>(s);
  }
  return index;
}

std::string describeSymbolValues(const std::vector<PlanSymbol> &symbols,
                                 const std::vector<int64_t> &values) {
  std::string out;
  for (size_t s = 0; s < symbols.size() && s < values.size(); ++s)
    out += (s ? ", " : "") + symbols[s].name + "=" + std::to_string(values[s]);
  return out;
}

std::string symbolicShapeString(const Plan &plan, const PlanBuffer &buffer) {
  std::string out = "[";
  for (size_t d = 0; d < buffer.shape.size(); ++d) {
    std::string dim = std::to_string(buffer.shape[d]);
    for (const PlanSymbolicValue &v : buffer.symbolicShape)
      if (v.index == d)
        dim = v.value.str(plan.symbols);
    out += (d ? ", " : "") + dim;
  }
  return out + "]";
}

std::string describeSymbols(const std::vector<PlanSymbol> &symbols) {
  std::string out;
  for (const PlanSymbol &s : symbols)
    out += (out.empty() ? "" : ", ") + s.name + " " + std::to_string(s.min) +
           ".." + std::to_string(s.max);
  return out;
}

namespace {

std::string quoted(const std::string &s) { return "'" + s + "'"; }

std::string shapeString(const Shape &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string bufferLabel(const PlanBuffer &b) {
  return "buffer " + std::to_string(b.id) +
         (b.name.empty() ? "" : " " + quoted(b.name));
}

std::vector<int64_t> maxima(const std::vector<PlanSymbol> &symbols) {
  std::vector<int64_t> out;
  for (const PlanSymbol &s : symbols)
    out.push_back(s.max);
  return out;
}

/// Why `value` is not a well-formed polynomial of `plan` equal to `atMax`
/// at the symbols' maxima, or "".
std::string checkPolynomial(const Plan &plan, const PlanPolynomial &value,
                            int64_t atMax) {
  for (const PlanPolynomial::Term &t : value.terms)
    if (t.powers.size() != plan.symbols.size())
      return "a term has " + std::to_string(t.powers.size()) +
             " powers for the plan's " + std::to_string(plan.symbols.size()) +
             " symbols";
  std::optional<int64_t> v = value.evaluate(maxima(plan.symbols));
  if (!v)
    return value.str(plan.symbols) + " overflows at the symbols' maxima";
  if (*v != atMax)
    return value.str(plan.symbols) + " is " + std::to_string(*v) +
           " at the symbols' maxima, but the plan holds " +
           std::to_string(atMax) + " there";
  return "";
}

} // namespace

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

std::string checkPlanSymbols(const Plan &plan) {
  if (!plan.isDynamic()) {
    for (const PlanBuffer &b : plan.buffers)
      if (!b.symbolicShape.empty())
        return bufferLabel(b) + " has symbolic dims, but the plan has no "
                                "symbols";
    for (size_t i = 0; i < plan.calls.size(); ++i)
      if (!plan.calls[i].symbolicAttributes.empty())
        return plan.calls[i].describe(i) +
               " has symbolic attributes, but the plan has no symbols";
    return "";
  }
  if (plan.symbols.size() > kMaxPlanSymbols)
    return "the plan has " + std::to_string(plan.symbols.size()) +
           " symbols, more than the " + std::to_string(kMaxPlanSymbols) +
           " a plan may have";
  std::set<std::string> names;
  for (const PlanSymbol &s : plan.symbols) {
    if (s.name.empty())
      return "a symbol has no name";
    if (!names.insert(s.name).second)
      return "two symbols are named " + quoted(s.name);
    if (s.min < 1 || s.max < s.min)
      return "symbol " + quoted(s.name) + " has the range " +
             std::to_string(s.min) + ".." + std::to_string(s.max) +
             " (1 <= min <= max)";
  }
  if (plan.training)
    return "a training plan has static shapes, but this one has symbols";
  for (const PlanBuffer &b : plan.buffers) {
    std::set<uint32_t> dims;
    for (const PlanSymbolicValue &v : b.symbolicShape) {
      std::string what = bufferLabel(b) + " dim " + std::to_string(v.index);
      if (b.storage == BufferStorage::State)
        return bufferLabel(b) + " is a state buffer with symbolic dims";
      if (v.index >= b.shape.size())
        return what + ": the buffer has rank " + std::to_string(b.shape.size());
      if (!dims.insert(v.index).second)
        return what + " has two symbolic values";
      if (std::string why = checkPolynomial(plan, v.value, b.shape[v.index]);
          !why.empty())
        return what + ": " + why;
    }
  }
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    const PlanCall &c = plan.calls[i];
    for (const PlanSymbolicValue &v : c.symbolicAttributes) {
      std::string what = c.describe(i) + " attribute " + quoted(v.attribute);
      const PlanAttrValue *attr = c.attr(v.attribute);
      int64_t atMax = 0;
      if (const auto *i64 = attr ? std::get_if<int64_t>(attr) : nullptr) {
        if (v.index != 0)
          return what +
                 " is an integer, but its symbolic value is for "
                 "element " +
                 std::to_string(v.index);
        atMax = *i64;
      } else if (const auto *list =
                     attr ? std::get_if<std::vector<int64_t>>(attr) : nullptr) {
        if (v.index >= list->size())
          return what + " has " + std::to_string(list->size()) +
                 " elements, but a symbolic value is for element " +
                 std::to_string(v.index);
        atMax = (*list)[v.index];
      } else {
        return what + " has a symbolic value but is " +
               (attr ? "not an integer or integer list" : "missing");
      }
      if (std::string why = checkPolynomial(plan, v.value, atMax); !why.empty())
        return what + " element " + std::to_string(v.index) + ": " + why;
    }
  }
  // Every symbol comes from an input's dim.
  std::vector<bool> bound(plan.symbols.size(), false);
  for (const PlanBinding &input : plan.inputs)
    if (const PlanBuffer *b = plan.buffer(input.buffer))
      for (const PlanSymbolicValue &v : b->symbolicShape)
        if (int s = v.value.symbolIndex(); s >= 0)
          bound[s] = true;
  for (size_t s = 0; s < bound.size(); ++s)
    if (!bound[s])
      return "symbol " + quoted(plan.symbols[s].name) +
             " is not a dim of any input";
  return "";
}

//===----------------------------------------------------------------------===//
// Binding and specialisation
//===----------------------------------------------------------------------===//

Result<std::vector<int64_t>>
bindSymbols(const Plan &plan,
            const std::vector<std::pair<std::string, Shape>> &inputShapes) {
  std::vector<int64_t> values(plan.symbols.size(), -1);
  std::vector<std::string> from(plan.symbols.size());
  for (const auto &[name, shape] : inputShapes) {
    const PlanBinding *input = plan.input(name);
    if (!input)
      continue; // the executor reports unknown inputs
    const PlanBuffer *b = plan.buffer(input->buffer);
    if (!b || b->symbolicShape.empty())
      continue;
    if (shape.size() != b->shape.size())
      return Status::error("input " + quoted(name) + " has rank " +
                           std::to_string(shape.size()) + ", but the plan's " +
                           std::to_string(b->shape.size()));
    for (const PlanSymbolicValue &v : b->symbolicShape) {
      int s = v.value.symbolIndex();
      if (s < 0)
        continue;
      std::string here =
          "input " + quoted(name) + " dim " + std::to_string(v.index);
      int64_t value = shape[v.index];
      if (values[s] >= 0 && values[s] != value)
        return Status::error(here + " is " + std::to_string(value) + ", but " +
                             from[s] + " gave " + plan.symbols[s].name + " = " +
                             std::to_string(values[s]));
      const PlanSymbol &sym = plan.symbols[s];
      if (value < sym.min || value > sym.max)
        return Status::error(
            here + " (" + sym.name + ") is " + std::to_string(value) +
            ", outside the plan's range " + std::to_string(sym.min) + ".." +
            std::to_string(sym.max) +
            ": compile a plan for a range that holds it");
      values[s] = value;
      from[s] = here;
    }
  }
  for (size_t s = 0; s < values.size(); ++s)
    if (values[s] < 0)
      return Status::error("no input gives symbol " +
                           quoted(plan.symbols[s].name) +
                           " (the inputs that have it are missing)");
  return values;
}

namespace {

/// The leading corner `to` of the row-major tensor `src` of shape `from`.
void copyCorner(const uint8_t *src, const Shape &from, uint8_t *dst,
                const Shape &to, size_t elementSize) {
  if (to.empty()) {
    std::memcpy(dst, src, elementSize);
    return;
  }
  if (numElements(to) == 0)
    return;
  size_t rank = to.size();
  // Bytes of one step along each dim of `from`.
  std::vector<size_t> fromStride(rank);
  size_t stride = elementSize;
  for (size_t d = rank; d-- > 0;) {
    fromStride[d] = stride;
    stride *= static_cast<size_t>(from[d]);
  }
  size_t rowBytes = static_cast<size_t>(to.back()) * elementSize;
  std::vector<int64_t> index(rank, 0);
  while (true) {
    size_t offset = 0;
    for (size_t d = 0; d + 1 < rank; ++d)
      offset += static_cast<size_t>(index[d]) * fromStride[d];
    std::memcpy(dst, src + offset, rowBytes);
    dst += rowBytes;
    size_t d = rank - 1;
    while (d-- > 0) {
      if (++index[d] < to[d])
        break;
      index[d] = 0;
    }
    if (d == static_cast<size_t>(-1))
      return;
  }
}

} // namespace

Result<Plan> specializePlan(const Plan &plan,
                            const std::vector<int64_t> &values) {
  if (values.size() != plan.symbols.size())
    return Status::error("specializePlan: " + std::to_string(values.size()) +
                         " values for " + std::to_string(plan.symbols.size()) +
                         " symbols");
  for (size_t s = 0; s < values.size(); ++s)
    if (values[s] < plan.symbols[s].min || values[s] > plan.symbols[s].max)
      return Status::error("symbol " + quoted(plan.symbols[s].name) + " = " +
                           std::to_string(values[s]) +
                           " is outside the plan's range " +
                           std::to_string(plan.symbols[s].min) + ".." +
                           std::to_string(plan.symbols[s].max));
  const std::string at = " at " + describeSymbolValues(plan.symbols, values);
  Plan out = plan;
  out.symbols.clear();
  for (PlanBuffer &b : out.buffers) {
    if (b.symbolicShape.empty())
      continue;
    const uint64_t slotBytes = b.byteCount();
    for (const PlanSymbolicValue &v : b.symbolicShape) {
      std::optional<int64_t> dim = v.value.evaluate(values);
      if (!dim || *dim < 0)
        return Status::error(
            bufferLabel(b) + " dim " + std::to_string(v.index) + " (" +
            v.value.str(plan.symbols) + ") is " +
            (dim ? std::to_string(*dim) : "out of range") + at);
      b.shape[v.index] = *dim;
    }
    b.symbolicShape.clear();
    // The arena was planned for the maxima: nothing may outgrow its slot.
    if (b.storage == BufferStorage::Arena && b.byteCount() > slotBytes)
      return Status::error(bufferLabel(b) + " " + shapeString(b.shape) +
                           " needs " + std::to_string(b.byteCount()) +
                           " bytes" + at + ", more than the " +
                           std::to_string(slotBytes) +
                           " its arena slot has (planned for the maxima)");
    if (b.storage == BufferStorage::Weight &&
        b.shape != out.weights[b.weight].shape) {
      const PlanWeight &whole = out.weights[b.weight];
      if (b.shape.size() != whole.shape.size())
        return Status::error(bufferLabel(b) + " has rank " +
                             std::to_string(b.shape.size()) + ", its weight " +
                             quoted(whole.name) + " " +
                             std::to_string(whole.shape.size()));
      for (size_t d = 0; d < b.shape.size(); ++d)
        if (b.shape[d] > whole.shape[d])
          return Status::error(bufferLabel(b) + " " + shapeString(b.shape) +
                               at + " is not a corner of its weight " +
                               quoted(whole.name) + " " +
                               shapeString(whole.shape));
      if (whole.external && !whole.data)
        return Status::error("the weight " + quoted(whole.name) +
                             " is external and not filled");
      size_t bytes = static_cast<size_t>(b.byteCount());
      std::shared_ptr<uint8_t> corner(new uint8_t[bytes ? bytes : 1],
                                      std::default_delete<uint8_t[]>());
      copyCorner(static_cast<const uint8_t *>(whole.data), whole.shape,
                 corner.get(), b.shape, byteSize(b.dtype));
      PlanWeight part;
      part.name = whole.name + "@" + shapeString(b.shape);
      part.dtype = whole.dtype;
      part.shape = b.shape;
      part.data = corner.get();
      part.size = bytes;
      part.owner = corner;
      b.weight = static_cast<uint32_t>(out.weights.size());
      out.weights.push_back(std::move(part));
    }
  }
  for (size_t i = 0; i < out.calls.size(); ++i) {
    PlanCall &c = out.calls[i];
    for (const PlanSymbolicValue &v : c.symbolicAttributes) {
      std::optional<int64_t> value = v.value.evaluate(values);
      if (!value)
        return Status::error(c.describe(i) + " attribute " +
                             quoted(v.attribute) + " overflows" + at);
      for (PlanAttr &a : c.attributes) {
        if (a.name != v.attribute)
          continue;
        if (auto *i64 = std::get_if<int64_t>(&a.value))
          *i64 = *value;
        else if (auto *list = std::get_if<std::vector<int64_t>>(&a.value);
                 list && v.index < list->size())
          (*list)[v.index] = *value;
      }
    }
    c.symbolicAttributes.clear();
  }
  for (std::vector<PlanBinding> *bindings : {&out.inputs, &out.outputs})
    for (PlanBinding &binding : *bindings)
      if (const PlanBuffer *b = out.buffer(binding.buffer))
        binding.shape = b->shape;
  return out;
}

//===----------------------------------------------------------------------===//
// Sampling and fitting
//===----------------------------------------------------------------------===//

Result<PlanSampling> planSampling(const std::vector<PlanSymbol> &symbols) {
  if (symbols.empty())
    return Status::error("a dynamic-shape plan needs at least one symbol");
  if (symbols.size() > kMaxPlanSymbols)
    return Status::error(std::to_string(symbols.size()) +
                         " dims have ranges; a plan takes at most " +
                         std::to_string(kMaxPlanSymbols));
  PlanSampling sampling;
  std::vector<std::vector<int64_t>> checkValues;
  for (const PlanSymbol &s : symbols) {
    if (s.min < 1 || s.max < s.min)
      return Status::error("the range of " + quoted(s.name) + " is " +
                           std::to_string(s.min) + ":" + std::to_string(s.max) +
                           "; it needs 1 <= min <= max");
    // Size 1 is special to compilers (a dim that broadcasts, a stride that
    // does not matter): the fit starts at 2 when the range is wide enough,
    // and 1 is checked.
    int64_t lo = s.min == 1 && s.max >= 4 ? 2 : s.min;
    std::set<int64_t> fit{lo, lo + (s.max - lo) / 2, s.max};
    sampling.fitValues.emplace_back(fit.begin(), fit.end());
    // Then next to the ends, so of the other parity than they are: a
    // halving (floor division) that fits the grid's even values fails there.
    std::vector<int64_t> check;
    for (int64_t v : {s.min, lo + 1, s.max - 1, lo + (s.max - lo) / 2 + 1})
      if (v >= s.min && v <= s.max && !fit.count(v) &&
          std::find(check.begin(), check.end(), v) == check.end() &&
          check.size() < 2)
        check.push_back(v);
    checkValues.push_back(check);
  }
  // The grid, the last symbol fastest.
  std::vector<size_t> index(symbols.size(), 0);
  while (true) {
    std::vector<int64_t> point;
    for (size_t s = 0; s < symbols.size(); ++s)
      point.push_back(sampling.fitValues[s][index[s]]);
    sampling.points.push_back(point);
    size_t s = symbols.size();
    while (s-- > 0) {
      if (++index[s] < sampling.fitValues[s].size())
        break;
      index[s] = 0;
    }
    if (s == static_cast<size_t>(-1))
      break;
  }
  sampling.gridSize = sampling.points.size();
  // Checks: each symbol's check values with the others at their maxima,
  // and (several symbols) all of them off the grid at once.
  std::vector<int64_t> top = maxima(symbols);
  for (size_t s = 0; s < symbols.size(); ++s)
    for (int64_t v : checkValues[s]) {
      std::vector<int64_t> point = top;
      point[s] = v;
      sampling.points.push_back(point);
    }
  if (symbols.size() > 1) {
    std::vector<int64_t> point;
    bool offGrid = true;
    for (size_t s = 0; s < symbols.size(); ++s) {
      offGrid &= !checkValues[s].empty();
      point.push_back(checkValues[s].empty() ? symbols[s].min
                                             : checkValues[s].front());
    }
    if (offGrid)
      sampling.points.push_back(point);
  }
  return sampling;
}

namespace {

/// An exact fraction, for the fit.
struct Fraction {
  __int128 num = 0, den = 1;

  static __int128 gcd(__int128 a, __int128 b) {
    a = a < 0 ? -a : a;
    b = b < 0 ? -b : b;
    while (b) {
      __int128 t = a % b;
      a = b;
      b = t;
    }
    return a;
  }
  Fraction() = default;
  Fraction(__int128 n, __int128 d = 1) : num(n), den(d) {
    if (den < 0) {
      num = -num;
      den = -den;
    }
    __int128 g = gcd(num, den);
    if (g > 1) {
      num /= g;
      den /= g;
    }
  }
  Fraction operator-(const Fraction &o) const {
    return Fraction(num * o.den - o.num * den, den * o.den);
  }
  Fraction operator*(const Fraction &o) const {
    return Fraction(num * o.num, den * o.den);
  }
  Fraction operator/(const Fraction &o) const {
    return Fraction(num * o.den, den * o.num);
  }
  bool isZero() const { return num == 0; }
};

/// The coefficients a (powers 0..n-1) with sum_p a_p x_r^p = y_r for the
/// n <= 3 distinct x: Gaussian elimination on the Vandermonde matrix.
std::vector<Fraction> solveVandermonde(const std::vector<int64_t> &x,
                                       std::vector<Fraction> y) {
  size_t n = x.size();
  std::vector<std::vector<Fraction>> m(n, std::vector<Fraction>(n));
  for (size_t r = 0; r < n; ++r) {
    __int128 power = 1;
    for (size_t p = 0; p < n; ++p, power *= x[r])
      m[r][p] = Fraction(power);
  }
  for (size_t col = 0; col < n; ++col) {
    size_t pivot = col;
    while (m[pivot][col].isZero())
      ++pivot; // distinct x: the matrix is invertible
    std::swap(m[pivot], m[col]);
    std::swap(y[pivot], y[col]);
    for (size_t r = 0; r < n; ++r) {
      if (r == col || m[r][col].isZero())
        continue;
      Fraction f = m[r][col] / m[col][col];
      for (size_t c = col; c < n; ++c)
        m[r][c] = m[r][c] - f * m[col][c];
      y[r] = y[r] - f * y[col];
    }
  }
  for (size_t r = 0; r < n; ++r)
    y[r] = y[r] / m[r][r];
  return y;
}

/// Whether element `e` of the integer list attribute `attr` of `call` has no
/// effect: a stride of a dim of size 1, only ever multiplied by 0. The
/// compiler writes what it likes there (0, often), so such a value is not
/// compared with the fit.
bool isFreeElement(const PlanCall &call, const std::string &attr, size_t e) {
  if (call.kind != "kernel.attention")
    return false;
  const auto *shape = call.attrAs<std::vector<int64_t>>("shape");
  if (!shape || shape->size() != 6)
    return false;
  // shape: [batch, heads, queries, keys, head_dim, value_dim]; a view:
  // [offset, batch, head, row and column strides].
  struct ViewDims {
    const char *name;
    int row, column;
  };
  static const ViewDims views[] = {{"q_view", 2, 4},
                                   {"k_view", 3, 4},
                                   {"v_view", 3, 5},
                                   {"o_view", 2, 5},
                                   {"mask_view", 2, 3}};
  for (const ViewDims &v : views)
    if (attr == v.name) {
      int dim = e == 1   ? 0
                : e == 2 ? 1
                : e == 3 ? v.row
                : e == 4 ? v.column
                         : -1;
      return dim >= 0 && (*shape)[dim] == 1;
    }
  return false;
}

/// The polynomial through `values` (one per grid point of `sampling`) with
/// integer coefficients, checked against the check points (but those where
/// `free`); nullopt when there is none.
std::optional<PlanPolynomial> fitPolynomial(const PlanSampling &sampling,
                                            const std::vector<int64_t> &values,
                                            const std::vector<bool> &free) {
  const size_t k = sampling.fitValues.size();
  std::vector<size_t> sizes;
  for (const auto &v : sampling.fitValues)
    sizes.push_back(v.size());
  std::vector<Fraction> grid(values.begin(),
                             values.begin() + sampling.gridSize);
  // Row-major strides of the grid.
  std::vector<size_t> stride(k, 1);
  for (size_t s = k - 1; s-- > 0;)
    stride[s] = stride[s + 1] * sizes[s + 1];
  // Along each symbol in turn, values to power coefficients.
  for (size_t s = 0; s < k; ++s) {
    for (size_t start = 0; start < grid.size(); ++start) {
      if ((start / stride[s]) % sizes[s] != 0)
        continue; // not the first point of a line along s
      std::vector<Fraction> line;
      for (size_t i = 0; i < sizes[s]; ++i)
        line.push_back(grid[start + i * stride[s]]);
      line = solveVandermonde(sampling.fitValues[s], line);
      for (size_t i = 0; i < sizes[s]; ++i)
        grid[start + i * stride[s]] = line[i];
    }
  }
  PlanPolynomial poly;
  for (size_t i = 0; i < grid.size(); ++i) {
    if (grid[i].isZero())
      continue;
    if (grid[i].den != 1 || grid[i].num > INT64_MAX || grid[i].num < INT64_MIN)
      return std::nullopt;
    PlanPolynomial::Term term;
    term.coefficient = static_cast<int64_t>(grid[i].num);
    for (size_t s = 0; s < k; ++s)
      term.powers.push_back(static_cast<uint8_t>((i / stride[s]) % sizes[s]));
    poly.terms.push_back(term);
  }
  // Highest powers first reads best ("2*batch*seq + 4").
  std::stable_sort(
      poly.terms.begin(), poly.terms.end(),
      [](const PlanPolynomial::Term &a, const PlanPolynomial::Term &b) {
        int da = 0, db = 0;
        for (uint8_t p : a.powers)
          da += p;
        for (uint8_t p : b.powers)
          db += p;
        return da > db;
      });
  for (size_t p = 0; p < sampling.points.size(); ++p)
    if (!(free[p] && p >= sampling.gridSize) &&
        poly.evaluate(sampling.points[p]) != values[p])
      return std::nullopt;
  return poly;
}

/// Compares plans compiled at different sample points and fits what
/// differs.
class Generalizer {
public:
  Generalizer(const std::vector<PlanSymbol> &symbols,
              const PlanSampling &sampling, const std::vector<Plan> &plans)
      : symbols_(symbols), sampling_(sampling), plans_(plans),
        ref_(plans[sampling.gridSize - 1]) {}

  Result<Plan> run();

private:
  std::string at(size_t p) const {
    return describeSymbolValues(symbols_, sampling_.points[p]);
  }
  /// "12 at batch=1, 16 at batch=4, ..." for a refused value.
  std::string valuesString(const std::vector<int64_t> &values) const {
    std::string out;
    const size_t shown = std::min<size_t>(values.size(), 6);
    for (size_t p = 0; p < shown; ++p)
      out += (p ? ", " : "") + std::to_string(values[p]) + " at " + at(p);
    return out + (shown < values.size() ? ", ..." : "");
  }
  std::string notPolynomial(const std::string &what,
                            const std::vector<int64_t> &values) const {
    return what + " is " + valuesString(values) +
           ": not a polynomial in the symbols with integer coefficients, so "
           "no plan can follow it over the range (make that dim static, or "
           "compile a plan per size)";
  }
  std::string compareStructure(size_t p) const;
  Status compareWeights() const;

  const std::vector<PlanSymbol> &symbols_;
  const PlanSampling &sampling_;
  const std::vector<Plan> &plans_;
  const Plan &ref_;
};

std::string Generalizer::compareStructure(size_t p) const {
  const Plan &plan = plans_[p];
  std::string differs = "the plan compiled at " + at(p) +
                        " differs from the one at the maxima (" +
                        at(sampling_.gridSize - 1) + "): ";
  if (plan.buffers.size() != ref_.buffers.size() ||
      plan.weights.size() != ref_.weights.size() ||
      plan.calls.size() != ref_.calls.size() ||
      plan.inputs.size() != ref_.inputs.size() ||
      plan.outputs.size() != ref_.outputs.size())
    return differs + std::to_string(plan.calls.size()) + " calls, " +
           std::to_string(plan.buffers.size()) + " buffers and " +
           std::to_string(plan.weights.size()) + " weights against " +
           std::to_string(ref_.calls.size()) + ", " +
           std::to_string(ref_.buffers.size()) + " and " +
           std::to_string(ref_.weights.size()) +
           " (the compiler took another path at these sizes)";
  if (plan.training || ref_.training)
    return "a training plan has static shapes: give its dims as sizes, not "
           "ranges";
  // Whether a call runs at load (its result Derived) or on every run (in
  // the arena) is the compiler's choice by size (culib-hoist-weight-calls):
  // either computes the same, and the plan takes the choice at the maxima.
  auto sameStorage = [](BufferStorage x, BufferStorage y) {
    auto madeByCalls = [](BufferStorage s) {
      return s == BufferStorage::Arena || s == BufferStorage::Derived;
    };
    return x == y || (madeByCalls(x) && madeByCalls(y));
  };
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlanBuffer &a = plan.buffers[i], &b = ref_.buffers[i];
    if (a.id != b.id || a.dtype != b.dtype ||
        !sameStorage(a.storage, b.storage) ||
        a.shape.size() != b.shape.size() ||
        (a.storage == BufferStorage::Weight && a.weight != b.weight) ||
        a.name != b.name)
      return differs + bufferLabel(a) + " is not the same buffer";
    if (a.storage == BufferStorage::State)
      return "a plan with state buffers has static shapes";
    if (b.storage == BufferStorage::Arena && a.byteCount() > b.byteCount())
      return differs + bufferLabel(a) + " is larger there (" +
             std::to_string(a.byteCount()) + " bytes against " +
             std::to_string(b.byteCount()) +
             "): the arena planned for the maxima cannot hold it";
  }
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    const PlanCall &a = plan.calls[i], &b = ref_.calls[i];
    if (a.kind != b.kind || a.operands != b.operands ||
        a.results != b.results || a.attributes.size() != b.attributes.size())
      return differs + a.describe(i) + " against " + b.describe(i);
    for (size_t j = 0; j < a.attributes.size(); ++j) {
      const PlanAttr &x = a.attributes[j], &y = b.attributes[j];
      const auto *xl = std::get_if<std::vector<int64_t>>(&x.value);
      const auto *yl = std::get_if<std::vector<int64_t>>(&y.value);
      bool sameShape = x.name == y.name && x.value.index() == y.value.index() &&
                       (!xl || xl->size() == yl->size());
      bool fittable = std::holds_alternative<int64_t>(x.value) || xl;
      if (!sameShape || (!fittable && x.value != y.value))
        return differs + a.describe(i) + " attribute " + quoted(x.name) +
               " differs (only integers can follow the symbols)";
    }
  }
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    if (plan.inputs[i].name != ref_.inputs[i].name ||
        plan.inputs[i].buffer != ref_.inputs[i].buffer)
      return differs + "input #" + std::to_string(i);
  for (size_t i = 0; i < plan.outputs.size(); ++i)
    if (plan.outputs[i].name != ref_.outputs[i].name ||
        plan.outputs[i].buffer != ref_.outputs[i].buffer)
      return differs + "output #" + std::to_string(i);
  return "";
}

Status Generalizer::compareWeights() const {
  for (size_t w = 0; w < ref_.weights.size(); ++w) {
    const PlanWeight &big = ref_.weights[w];
    for (size_t p = 0; p < plans_.size(); ++p) {
      const PlanWeight &small = plans_[p].weights[w];
      std::string what = "the constant " + quoted(big.name);
      if (small.name != big.name || small.dtype != big.dtype ||
          small.shape.size() != big.shape.size())
        return Status::error(what + " is another weight at " + at(p));
      if (small.shape == big.shape) {
        if (small.size && std::memcmp(small.data, big.data, small.size) != 0)
          return Status::error(
              what + " has other values at " + at(p) + " than at " +
              at(sampling_.gridSize - 1) +
              ": it is computed from the dims, and a dynamic-shape plan "
              "holds only constants that are the leading corner of their "
              "largest form");
        continue;
      }
      for (size_t d = 0; d < big.shape.size(); ++d)
        if (small.shape[d] > big.shape[d])
          return Status::error(what + " " + shapeString(small.shape) + " at " +
                               at(p) +
                               " is larger than at the "
                               "maxima " +
                               shapeString(big.shape));
      std::vector<uint8_t> corner(small.size);
      copyCorner(static_cast<const uint8_t *>(big.data), big.shape,
                 corner.data(), small.shape, byteSize(big.dtype));
      if (small.size && std::memcmp(corner.data(), small.data, small.size))
        return Status::error(
            what + " " + shapeString(small.shape) + " at " + at(p) +
            " is not the leading corner of its form at the maxima " +
            shapeString(big.shape) +
            ": a dynamic-shape plan holds only constants computed from "
            "the dims that are");
    }
  }
  return Status::ok();
}

Result<Plan> Generalizer::run() {
  for (size_t p = 0; p < plans_.size(); ++p)
    if (std::string why = compareStructure(p); !why.empty())
      return Status::error(why);
  Plan out = ref_;
  out.symbols = symbols_;
  if (Status s = compareWeights(); !s)
    return s;

  std::vector<int64_t> values(plans_.size());
  std::vector<bool> free(plans_.size(), false);
  // Whether the value changes (at the points where it matters).
  auto differs = [&]() {
    const int64_t atMax = values[sampling_.gridSize - 1];
    for (size_t p = 0; p < values.size(); ++p)
      if (values[p] != atMax && !(free[p] && p >= sampling_.gridSize))
        return true;
    return false;
  };
  for (size_t i = 0; i < out.buffers.size(); ++i) {
    PlanBuffer &b = out.buffers[i];
    for (size_t d = 0; d < b.shape.size(); ++d) {
      for (size_t p = 0; p < plans_.size(); ++p)
        values[p] = plans_[p].buffers[i].shape[d];
      if (!differs())
        continue;
      std::optional<PlanPolynomial> poly =
          fitPolynomial(sampling_, values, free);
      if (!poly)
        return Status::error(notPolynomial(
            bufferLabel(b) + " dim " + std::to_string(d), values));
      b.symbolicShape.push_back({static_cast<uint32_t>(d), "", *poly});
    }
  }
  for (size_t i = 0; i < out.calls.size(); ++i) {
    PlanCall &c = out.calls[i];
    for (size_t p = 0; p < plans_.size(); ++p)
      c.workspaceSize =
          std::max(c.workspaceSize, plans_[p].calls[i].workspaceSize);
    for (size_t j = 0; j < c.attributes.size(); ++j) {
      const PlanAttr &a = c.attributes[j];
      size_t count = 1;
      if (const auto *list = std::get_if<std::vector<int64_t>>(&a.value))
        count = list->size();
      else if (!std::holds_alternative<int64_t>(a.value))
        continue;
      for (size_t e = 0; e < count; ++e) {
        for (size_t p = 0; p < plans_.size(); ++p) {
          const PlanAttrValue &v = plans_[p].calls[i].attributes[j].value;
          values[p] = std::holds_alternative<int64_t>(v)
                          ? std::get<int64_t>(v)
                          : std::get<std::vector<int64_t>>(v)[e];
          free[p] = isFreeElement(plans_[p].calls[i], a.name, e);
        }
        bool changes = differs();
        std::optional<PlanPolynomial> poly;
        if (changes)
          poly = fitPolynomial(sampling_, values, free);
        std::fill(free.begin(), free.end(), false);
        if (!changes)
          continue;
        if (!poly)
          return Status::error(notPolynomial(
              c.describe(i) + " attribute " + quoted(a.name) +
                  (count > 1 ||
                           std::holds_alternative<std::vector<int64_t>>(a.value)
                       ? " element " + std::to_string(e)
                       : ""),
              values));
        c.symbolicAttributes.push_back(
            {static_cast<uint32_t>(e), a.name, *poly});
      }
    }
  }
  for (std::vector<PlanBinding> *bindings : {&out.inputs, &out.outputs})
    for (PlanBinding &binding : *bindings)
      binding.shape = out.buffer(binding.buffer)->shape;
  if (std::string why = checkPlanSymbols(out); !why.empty())
    return Status::error(why);
  return out;
}

} // namespace

Result<Plan> generalizePlans(const std::vector<PlanSymbol> &symbols,
                             const PlanSampling &sampling,
                             const std::vector<Plan> &plans) {
  if (plans.size() != sampling.points.size() || sampling.gridSize == 0 ||
      sampling.gridSize > plans.size())
    return Status::error(
        "generalizePlans: " + std::to_string(plans.size()) + " plans for " +
        std::to_string(sampling.points.size()) + " sample points");
  return Generalizer(symbols, sampling, plans).run();
}

} // namespace mp::rt
