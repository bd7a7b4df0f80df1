"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.assertModelAllowed = assertModelAllowed;
exports.ownerOf = ownerOf;
const app_error_1 = require("../errors/app-error");
/** A key limited to some models asking for another: 403 (decisions.md section 2). */
function assertModelAllowed(principal, model) {
    if (principal.kind === 'key' && principal.allowedModels.length > 0 && !principal.allowedModels.includes(model)) {
        throw new app_error_1.AppError('FORBIDDEN', `This API key may not use model ${model}`);
    }
}
/** Who a generation or file belongs to: the organization, the key (if any) and the user (the key's member). */
function ownerOf(p) {
    return { organizationId: p.organizationId, apiKeyId: p.kind === 'key' ? p.keyId : null, userId: p.userId };
}
