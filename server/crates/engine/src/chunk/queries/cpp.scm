; C++-only definitions, appended to c.scm (capture conventions: chunk/mod.rs).
; Out-of-line definitions (`void Foo::bar() {}`) are qualified by the scope
; written in their declarator.

(class_specifier name: (_) @name.path body: (_)) @definition.class
(namespace_definition name: (_) @name.path) @definition.module
(alias_declaration name: (type_identifier) @name) @definition.type
(concept_definition name: (identifier) @name) @definition.type

; Namespace-scope constants and variables (c.scm covers file scope).
(translation_unit (declaration (type_qualifier ["const" "constexpr"])
  declarator: (init_declarator declarator: (_) @name.decl)) @definition.constant)
(declaration_list (declaration (type_qualifier ["const" "constexpr"])
  declarator: (init_declarator declarator: (_) @name.decl)) @definition.constant)
(declaration_list (declaration declarator: (init_declarator declarator: (_) @name.decl)) @definition.variable)

; Attributes, and templates wrapping the definition they declare.
(attribute_declaration) @attribute
(template_declaration
  [(function_definition) (class_specifier) (struct_specifier) (union_specifier)
   (alias_declaration) (concept_definition) (declaration) (template_declaration)] @wrapped) @wrapper
