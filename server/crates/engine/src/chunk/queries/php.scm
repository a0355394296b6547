; PHP definitions for the chunker (capture conventions: chunk/mod.rs).
; Members are qualified `Class::method`, as PHP writes them.

(class_declaration name: (name) @name) @definition.class
(interface_declaration name: (name) @name) @definition.interface
(trait_declaration name: (name) @name) @definition.trait
(enum_declaration name: (name) @name) @definition.enum
(function_definition name: (name) @name) @definition.function
(method_declaration name: (name) @name) @definition.method
(const_element (name) @name) @definition.constant

; Comments, attributes, and a `const` with a single element.
(comment) @comment
(attribute_list) @attribute
(const_declaration (const_element) @wrapped) @wrapper

; A braced namespace holds its definitions (`namespace A\B;` has no body).
(namespace_definition name: (namespace_name) @name body: (compound_statement)) @definition.module
