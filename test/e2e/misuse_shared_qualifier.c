// MW_SHARED on anything but a file-scope or static variable is a compile-time error
// whose note shows the rule.
// RUN: not %mwcc -c -DCASE_LOCAL %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOCAL
// RUN: not %mwcc -c -DCASE_PARAM %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=PARAM
// RUN: not %mwcc -c -DCASE_FUNCTION %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=FUNCTION
// RUN: %mwcc -c %s -o /dev/null
// RUN: not %mwcc -x c++ -std=c++17 -c -DCASE_FUNCTION %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=CXXFUNCTION
// RUN: %mwcc -x c++ -std=c++17 -c %s -o /dev/null
#include <midway.h>

MW_SHARED int fine;
static MW_SHARED double also_fine[4];
int use(void) {
  static MW_SHARED int static_local_is_fine;
  static_local_is_fine += fine;
  return static_local_is_fine + (int)also_fine[fine & 3];
}

#ifdef CASE_LOCAL
// LOCAL: error: 'section' attribute only applies to functions, global variables
// LOCAL: note: expanded from macro 'MW_SHARED'
// LOCAL: MW_SHARED: file-scope or static variables only
int local(void) {
  MW_SHARED int x = 1;
  return x;
}
#endif

#ifdef CASE_PARAM
// PARAM: error: {{.*}}cannot be applied to a function parameter
// PARAM: MW_SHARED: file-scope or static variables only
int param(MW_SHARED int p) { return p; }
#endif

#ifdef CASE_FUNCTION
// FUNCTION: error: '_Alignas' attribute only applies to variables and fields
// FUNCTION: MW_SHARED: file-scope or static variables only
// CXXFUNCTION: error: 'function' causes a section type conflict with '__mw_section_anchor'
MW_SHARED int function(void);
#endif
