// The auth tag's operations (accounts and sessions).
import type { HandlerMap } from '../../src/http/handler-types';
import { deleteMe } from './deleteMe';
import { register } from './register';
import { login } from './login';
import { logout } from './logout';
import { logoutAll } from './logoutAll';
import { getMe } from './getMe';
import { verifyEmail } from './verifyEmail';
import { resendVerificationEmail } from './resendVerificationEmail';
import { changePassword } from './changePassword';
import { forgotPassword } from './forgotPassword';
import { resetPassword } from './resetPassword';
import { completeMfaLogin } from './completeMfaLogin';
import { startMfaPasskey } from './startMfaPasskey';

export const authHandlers: HandlerMap = {
  deleteMe,
  register,
  login,
  logout,
  logoutAll,
  getMe,
  verifyEmail,
  resendVerificationEmail,
  changePassword,
  forgotPassword,
  resetPassword,
  completeMfaLogin,
  startMfaPasskey,
};
