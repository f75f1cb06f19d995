// Names shared by the skill publishers (operator, CLI) and the readers (worker).

/**
 * The `skills.namespace` of the skills bundled with the product (skills/ in the image). It has a
 * colon, so no Kubernetes namespace — and no GitOps Skill — can ever take it.
 */
export const BUNDLED_SKILLS_NAMESPACE = 'hermes:bundled';
