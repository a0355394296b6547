; Ruby definitions for the chunker (capture conventions: chunk/mod.rs).
; `.singleton` marks class-level methods, qualified `Class.method` instead of
; `Class#method`.

(module name: (constant) @name) @definition.module
(module name: (scope_resolution) @name.path) @definition.module
(class name: (constant) @name) @definition.class
(class name: (scope_resolution) @name.path) @definition.class

(singleton_class body: (body_statement (method name: (_) @name) @definition.method.singleton))
(singleton_method name: (_) @name) @definition.method.singleton
(method name: (_) @name) @definition.method

(assignment left: (constant) @name) @definition.constant

; Comments.
(comment) @comment
