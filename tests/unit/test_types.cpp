// The type lists generate the typed families: check they hold exactly the types the ABI names.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "mori/core/types.hpp"

TEST_CASE("the element type list names the 11 ABI types in order") {
  std::vector<std::string> names;
#define MORI_NAME_(type, name) names.push_back(#name);
  MORI_FOR_EACH_TYPE(MORI_NAME_)
#undef MORI_NAME_
  CHECK(names == std::vector<std::string>{"uint8", "int8", "schar", "uint16", "int16", "uint32",
                                          "int32", "uint64", "int64", "float", "double"});
  CHECK(mori::ElementTypes::kSize == 11);
}

TEST_CASE("the _p type list names the 16 C type names of the ABI") {
  std::vector<std::string> names;
  std::vector<size_t> sizes;
#define MORI_NAME_(type, name) names.push_back(#name), sizes.push_back(sizeof(type));
  MORI_FOR_EACH_P_TYPE(MORI_NAME_)
#undef MORI_NAME_
  CHECK(names == std::vector<std::string>{"int", "long", "longlong", "float", "double", "char",
                                          "short", "uint", "ulong", "ulonglong", "uchar", "ushort",
                                          "int32", "int64", "uint32", "uint64"});
  CHECK(sizes == std::vector<size_t>{4, 8, 8, 4, 8, 1, 2, 4, 8, 8, 1, 2, 4, 8, 4, 8});
}

TEST_CASE("the atomic type lists: the ABI's four integers and OpenSHMEM's three AMO classes") {
#define MORI_CHECK_(type, name) \
  CHECK((std::is_integral_v<type> && (sizeof(type) == 4 || sizeof(type) == 8)));
  MORI_FOR_EACH_AMO_TYPE(MORI_CHECK_)
  MORI_FOR_EACH_AMO_STANDARD_TYPE(MORI_CHECK_)
#undef MORI_CHECK_
  CHECK(mori::AmoTypes::kSize == 4);
  // OpenSHMEM 1.5's 7 bitwise, 12 standard and 14 extended C types, as distinct LP64 C++ types.
  CHECK(std::is_same_v<mori::AmoBitwiseTypes,
                       mori::TypeList<uint32_t, int32_t, uint64_t, int64_t, unsigned long long>>);
  CHECK(std::is_same_v<mori::AmoStandardTypes, mori::TypeList<uint32_t, int32_t, uint64_t, int64_t,
                                                              unsigned long long, long long>>);
  CHECK(std::is_same_v<mori::AmoExtendedTypes,
                       mori::TypeList<uint32_t, int32_t, uint64_t, int64_t, unsigned long long,
                                      long long, float, double>>);
  std::vector<std::string> names;
#define MORI_NAME_(type, name) names.push_back(#name);
  MORI_FOR_EACH_AMO_EXTENDED_TYPE(MORI_NAME_)
#undef MORI_NAME_
  CHECK(names == std::vector<std::string>{"uint32", "int32", "uint64", "int64", "ulonglong",
                                          "longlong", "float", "double"});
}
