// SPDX-License-Identifier: MIT
// libcco.so with the libstdc++ of RHEL 8 (GCC 8: symbol versions up to GLIBCXX_3.4.25): what a
// GCC 12 build would take from libstdc++.so at newer versions, defined in libcco.so instead.
//
//   GLIBCXX_3.4.26  std::string's non-const data(), the default constructors of ostringstream
//                   and stringstream: instantiated here (the headers hold their definitions;
//                   libstdc++.so only exported them later)
//   GLIBCXX_3.4.29  std::__throw_bad_array_new_length, which GCC 12's allocators call
// The version script keeps these local to libcco.so: nothing of libstdc++ crosses its C API.
#include <new>
#include <sstream>
#include <string>

template class std::__cxx11::basic_string<char>;
template class std::__cxx11::basic_ostringstream<char>;
template class std::__cxx11::basic_stringstream<char>;

namespace std {
[[noreturn]] void __throw_bad_array_new_length() { throw std::bad_array_new_length(); }
}  // namespace std
