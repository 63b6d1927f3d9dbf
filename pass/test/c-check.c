// A check build from C (mwcc -fmidway-check passes -mllvm -midway-check and line
// tables): each site has its file, line and column, the function it is in, the chain
// of calls it was inlined through, and the global it falls in with its array shape,
// so that the runtime can print "store of 4 bytes to A[3][17] at c-check.c:12:11 in
// put, inlined into set at c-check.c:16:3".
// RUN: %clang_mw -fplugin=%plugin -O2 -gline-tables-only -mllvm -midway-check -S -emit-llvm \
// RUN:   -o - %s | FileCheck %s
// Without -midway-check, nothing of it.
// RUN: %clang_mw -fplugin=%plugin -O2 -gline-tables-only -S -emit-llvm -o - %s \
// RUN:   | FileCheck %s --check-prefix=DEFAULT
// DEFAULT-NOT: mw_check
// DEFAULT-NOT: mw_site
#include <midway.h>
#include <string.h>

MW_SHARED float A[64][32];
MW_SHARED char name[32];

static inline void put(int i, int j, float v) {
  A[i][j] = v;
}

void set(int i, int j, float v) {
  put(i, j, v);
}

float get(int i, int j) {
  return A[i][j];
}

void rename_it(const char *s) {
  strcpy(name, s);
}

// CHECK-DAG: [[FILE:@midway.str[.0-9]*]] = private unnamed_addr constant [{{[0-9]+}} x i8] c"{{.*}}c-check.c\00"
// CHECK-DAG: [[SET:@midway.str[.0-9]*]] = private unnamed_addr constant [4 x i8] c"set\00"
// CHECK-DAG: [[PUT:@midway.str[.0-9]*]] = private unnamed_addr constant [4 x i8] c"put\00"
// CHECK-DAG: [[GET:@midway.str[.0-9]*]] = private unnamed_addr constant [4 x i8] c"get\00"
// CHECK-DAG: [[RENAME:@midway.str[.0-9]*]] = private unnamed_addr constant [10 x i8] c"rename_it\00"
// CHECK-DAG: [[CALL:@midway.inlined_at[.0-9]*]] = private constant %struct.mw_location { ptr [[FILE]], ptr [[SET]], i32 24, i32 3, ptr null }
// CHECK-DAG: [[A:@midway.object[.0-9]*]] = private constant { ptr, ptr, i64, i64, i32, i32, [4 x i64] } { ptr {{@midway.name[.0-9]*}}, ptr @A, i64 8192, i64 4, i32 2, i32 0, [4 x i64] [i64 64, i64 32, i64 0, i64 0] }
// CHECK-DAG: [[NAME:@midway.object[.0-9]*]] = private constant { ptr, ptr, i64, i64, i32, i32, [4 x i64] } { ptr {{@midway.name[.0-9]*}}, ptr @name, i64 32, i64 1, i32 1, i32 0, [4 x i64] [i64 32, i64 0, i64 0, i64 0] }
// CHECK-DAG: [[STORE:@midway.site[.0-9]*]] = private constant %struct.mw_site { %struct.mw_location { ptr [[FILE]], ptr [[PUT]], i32 20, i32 11, ptr [[CALL]] }, ptr [[A]], i32 4, i8 2, [3 x i8] zeroinitializer }, section "mw_sites", align 8
// CHECK-DAG: [[LOAD:@midway.site[.0-9]*]] = private constant %struct.mw_site { %struct.mw_location { ptr [[FILE]], ptr [[GET]], i32 28, i32 10, ptr null }, ptr [[A]], i32 4, i8 1, [3 x i8] zeroinitializer }, section "mw_sites", align 8
// CHECK-DAG: [[STRCPY:@midway.site[.0-9]*]] = private constant %struct.mw_site { %struct.mw_location { ptr [[FILE]], ptr [[RENAME]], i32 32, i32 3, ptr null }, ptr [[NAME]], i32 0, i8 10, [3 x i8] zeroinitializer }, section "mw_sites", align 8

// CHECK-LABEL: define {{.*}}void @set(
// CHECK:         call void @__mw_check_store(ptr {{%.*}}, i64 4, ptr [[STORE]]), !dbg
// CHECK-NEXT:    store float
// CHECK-LABEL: define {{.*}}float @get(
// CHECK:         call void @__mw_check_load(ptr {{%.*}}, i64 4, ptr [[LOAD]]), !dbg
// CHECK-NEXT:    load float
// A C library call that writes shared memory is checked after it returns, when
// the length it wrote is known.
// CHECK-LABEL: define {{.*}}void @rename_it(
// CHECK:         call ptr @strcpy(ptr {{.*}}@name
// CHECK:         [[LEN:%.*]] = call i64 @strlen(ptr @name)
// CHECK:         call void @__mw_check_store(ptr @name, i64 {{%.*}}, ptr [[STRCPY]])
