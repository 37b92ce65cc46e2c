// Clang's thread-safety analysis (-Wthread-safety), as macros that vanish for other
// compilers. Mark what a mutex guards and which functions need it held, and the compiler
// checks every access (the CI job "thread-safety" builds with clang and -Werror):
//
//   class Queue {
//    public:
//     void push(int v) HORA_EXCLUDES(mu_);      // takes mu_ itself
//    private:
//     void push_locked(int v) HORA_REQUIRES(mu_);  // the caller holds mu_
//     Mutex mu_;
//     std::vector<int> items_ HORA_GUARDED_BY(mu_);
//   };
//
// The capabilities are hora::Mutex and hora::MutexLock (hora/mutex.h); std::mutex carries
// no annotations in libstdc++, so annotated code locks a hora::Mutex. The names follow
// Abseil's and LevelDB's (port/thread_annotations.h).
#pragma once

#if defined(__clang__)
#define HORA_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define HORA_THREAD_ANNOTATION(x)
#endif

// On a data member: only read or written with the mutex held.
#define HORA_GUARDED_BY(x) HORA_THREAD_ANNOTATION(guarded_by(x))
// On a pointer member: the pointee is guarded by the mutex.
#define HORA_PT_GUARDED_BY(x) HORA_THREAD_ANNOTATION(pt_guarded_by(x))
// Lock order: this mutex is taken after (before) the ones named.
#define HORA_ACQUIRED_AFTER(...) HORA_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define HORA_ACQUIRED_BEFORE(...) HORA_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
// On a function: the caller must hold (must not hold) the mutexes.
#define HORA_REQUIRES(...) HORA_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define HORA_EXCLUDES(...) HORA_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// On a function: it acquires (releases) the mutexes and returns holding (not holding) them.
#define HORA_ACQUIRE(...) HORA_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define HORA_RELEASE(...) HORA_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define HORA_TRY_ACQUIRE(...) HORA_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// On a function: tells the analysis the mutex is held (checked at run time, if at all).
#define HORA_ASSERT_HELD(x) HORA_THREAD_ANNOTATION(assert_capability(x))
// On a function returning a reference to a mutex.
#define HORA_RETURN_CAPABILITY(x) HORA_THREAD_ANNOTATION(lock_returned(x))
// On a class: it is a mutex; a scoped lock.
#define HORA_CAPABILITY(x) HORA_THREAD_ANNOTATION(capability(x))
#define HORA_SCOPED_CAPABILITY HORA_THREAD_ANNOTATION(scoped_lockable)
// On a function the analysis cannot follow (say why beside it).
#define HORA_NO_THREAD_SAFETY_ANALYSIS HORA_THREAD_ANNOTATION(no_thread_safety_analysis)
